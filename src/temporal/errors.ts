// Errors a command reports without loading the Temporal client (src/starters/cli.ts's exit codes).

/** Temporal could not be reached (or refused the connection): exit 1 naming the address and what to check. */
export class UnreachableError extends Error {}
