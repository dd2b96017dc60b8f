// Node options for the runner process.
//
// On SIGUSR1 Node starts its inspector on 127.0.0.1:9229, and anything that can connect to it
// runs code inside the process. A runner holds the caller's whole environment beside an agent
// that can signal it. Every prun-job process closes that door first thing (kit's
// closeDebuggerDoor, through runBin and main); a runner also gets this flag where Node has it.

/** `--disable-sigusr1` where this Node has it (22.14 and later): shut from the first instruction. */
export function runnerNodeOptions(): string[] {
  return process.allowedNodeEnvironmentFlags.has('--disable-sigusr1') ? ['--disable-sigusr1'] : [];
}
