// The contract between the stack locks (operator/pulumi/stack-locks.ts), which ask whether the
// holder of a lock taken on another host is gone, and whoever can tell (operator/kube/peer-pods.ts
// judges by that host's pod). It lives here so that neither layer imports the other.

/** Whether a lock's holder is provably gone, and why: the reason goes to the log and, for a kept lock, to the object's status. */
export interface HolderVerdict {
  readonly gone: boolean;
  readonly why: string;
}

/** Judges a lock taken on another host (`takenAtMs` by that host's clock, when the lock says). */
export type HolderCheck = (host: string, takenAtMs: number | undefined) => Promise<HolderVerdict>;
