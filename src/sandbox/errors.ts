// The sandbox's error, apart from the sandbox's code so that the CLI can tell it without loading that.

/** A sandbox that cannot start or be found: exit 1 with what failed (a component named with its log's tail). */
export class SandboxError extends Error {}
