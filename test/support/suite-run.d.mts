export declare const RUN_DIR_VARIABLE: string;
export declare function startRun(): string;
export declare function runDir(): string | undefined;
export declare function keyOf(testPath: string): string;
