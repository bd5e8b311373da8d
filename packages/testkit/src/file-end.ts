/**
 * What a test file must undo once its last test has run and its fixtures are closed (vitest-setup
 * runs these around the file). A module of its own, without imports, so that vitest-setup can tell
 * without loading the index whether there is anything to do.
 */
export const fileEndTasks = new Map<string, () => Promise<void>>();
