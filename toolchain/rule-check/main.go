// rule-check: checks Prometheus rule files as Prometheus itself reads them, with its own rule-file
// parser (model/rulefmt, which also parses each expression and template) and PromQL parser, and
// says which metrics each rule reads. test/unit/prometheus-rule.test.ts runs it on the alerts the
// install ships (components/prometheus-rule.ts); it is not part of the operator.
//
// Usage: rule-check FILE... It prints one JSON object on stdout:
//
//	{"errors": ["..."], "rules": [{"group": "...", "name": "...", "metrics": ["..."], "unnamed": 0}]}
//
// where metrics are the metric names of the rule's vector and matrix selectors, and unnamed counts
// selectors without a metric name (which the caller cannot check). It exits 1 when there are errors.
package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

type ruleReport struct {
	Group   string   `json:"group"`
	Name    string   `json:"name"`
	Metrics []string `json:"metrics"`
	Unnamed int      `json:"unnamed"`
}

type report struct {
	Errors []string     `json:"errors"`
	Rules  []ruleReport `json:"rules"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rule-check FILE...")
		os.Exit(2)
	}
	// The stricter of Prometheus's name schemes, which every Prometheus release accepts; and
	// Prometheus's default parser, with no experimental functions.
	p := parser.NewParser(parser.Options{})
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	out := report{Errors: []string{}, Rules: []ruleReport{}}
	for _, file := range os.Args[1:] {
		// As `promtool check rules` does (unknown fields refused), then each rule's expression again
		// for the metrics it reads.
		groups, errs := rulefmt.ParseFile(file, false, model.LegacyValidation, p, logger)
		for _, err := range errs {
			out.Errors = append(out.Errors, err.Error())
		}
		if groups == nil {
			continue
		}
		for _, group := range groups.Groups {
			seen := map[string]bool{}
			for _, rule := range group.Rules {
				name := rule.Alert + rule.Record
				if seen[name] && rule.Alert != "" {
					// promtool's duplicate check is of recording rules; two alerts of one name in a group
					// are legal but here always a mistake: their runbook entries would be one.
					out.Errors = append(out.Errors, fmt.Sprintf("%s: group %s: alert %s defined twice", file, group.Name, name))
				}
				seen[name] = true
				expr, err := p.ParseExpr(rule.Expr)
				if err != nil {
					// rulefmt has reported it already.
					continue
				}
				out.Rules = append(out.Rules, selectors(group.Name, name, expr))
			}
		}
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "rule-check:", err)
		os.Exit(2)
	}
	if len(out.Errors) > 0 {
		os.Exit(1)
	}
}

// selectors lists the metric names of every selector in expr.
func selectors(group, name string, expr parser.Expr) ruleReport {
	names := map[string]bool{}
	unnamed := 0
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		selector, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		metric := selector.Name
		for _, matcher := range selector.LabelMatchers {
			if matcher.Name == labels.MetricName && matcher.Type == labels.MatchEqual {
				metric = matcher.Value
			}
		}
		if metric == "" {
			unnamed++
		} else {
			names[metric] = true
		}
		return nil
	})
	metrics := make([]string, 0, len(names))
	for metric := range names {
		metrics = append(metrics, metric)
	}
	sort.Strings(metrics)
	return ruleReport{Group: group, Name: name, Metrics: metrics, Unnamed: unnamed}
}
