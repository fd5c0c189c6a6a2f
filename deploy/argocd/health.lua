-- Argo CD's health check of appstack's App and Memcached (appstack.dev/v1alpha1), for argocd-cm's
-- resource.customizations.health.appstack.dev_App and resource.customizations.health.appstack.dev_Memcached
-- (docs/monitoring.md). It reads an object as kstatus does (sigs.k8s.io/cli-utils, Flux's and
-- kapply's reading): Current is Healthy, InProgress is Progressing, Failed is Degraded, and an
-- object being deleted (Terminating) is Progressing. One state kstatus does not tell apart: an object
-- appstack holds (spec.suspend: its Ready condition's reason is Suspended, for the current
-- generation) is Suspended, whether kstatus reads it Current (nothing held back) or InProgress (a
-- change or a drift waiting for the resume). The tests run it against objects read back from a
-- cluster, beside kstatus. Plain Lua 5.1, as Argo CD's interpreter (gopher-lua) runs it.
local hs = {}

local function condition(status, type)
  if status == nil or status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == type then
      return c
    end
  end
  return nil
end

local function result(health, message)
  hs.status = health
  hs.message = message or ""
  return hs
end

local status = obj.status
local generation = obj.metadata.generation
local ready = condition(status, "Ready")

if obj.metadata.deletionTimestamp ~= nil then
  return result("Progressing", "being deleted: appstack destroys what it made, then removes its finalizer")
end

if ready ~= nil and ready.reason == "Suspended" and generation ~= nil and ready.observedGeneration == generation then
  return result("Suspended", ready.message)
end

-- The generation is not applied yet: what the object says speaks for an earlier spec.
if status ~= nil and generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration ~= generation then
  local why = ""
  if ready ~= nil and ready.message ~= nil and ready.message ~= "" then
    why = ": " .. ready.message
  end
  return result("Progressing", "generation " .. tostring(generation) .. " is not applied yet (observedGeneration " .. tostring(status.observedGeneration) .. ")" .. why)
end

if status ~= nil and status.conditions ~= nil then
  for _, c in ipairs(status.conditions) do
    if c.type == "Reconciling" and c.status == "True" then
      return result("Progressing", c.message)
    end
    if c.type == "Stalled" and c.status == "True" then
      return result("Degraded", c.message)
    end
  end
end

if ready ~= nil then
  if ready.status == "True" then
    return result("Healthy", ready.message)
  end
  if ready.status == "False" or ready.status == "Unknown" then
    return result("Progressing", ready.message)
  end
end

-- No condition to go by: kstatus takes such an object for current. (appstack's schema defaults
-- status.observedGeneration to 0, so a new object reads as not applied above until appstack writes.)
return result("Healthy", "")
