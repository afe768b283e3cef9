// What the Web UI shows beside each activity an App's workflow schedules (its summary, one line;
// docs/web-ui.md). Pure: imported by workflow code.

export const reconcileSummary = (app: string, command: { kind: string } | undefined) =>
  `reconcile App ${app}${command ? ` (${command.kind} command)` : ''}: its workloads and status`;
export const waitSummary = (app: string) => `wait for App ${app}'s workloads to be ready`;
