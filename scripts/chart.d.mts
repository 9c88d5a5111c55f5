// Types of scripts/chart.mjs for the TypeScript tests that use it.
export declare const CHART: string;
export declare const KUBE_VERSION: string;
export declare function exampleValuesFiles(): string[];
export declare function lintChart(valuesFiles?: string[], set?: Record<string, unknown>): Promise<{ ok: boolean; output: string }>;
export declare function renderChart(
  valuesFiles?: string[],
  set?: Record<string, unknown>,
  options?: { release?: string; namespace?: string },
): Promise<{ ok: boolean; manifest: string; error: string }>;
export declare function releaseNotes(valuesFiles?: string[], set?: Record<string, unknown>): Promise<string>;
export declare function generatedReadme(): string;
