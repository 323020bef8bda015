/** The crash matrix (test/helpers/crash-matrix.ts) on the file backend: every case. */
import { crashMatrix } from "../helpers/crash-matrix";
import { backendLockFiles } from "../helpers/processes";

crashMatrix({ name: "file", start: async () => ({ env: {}, stop: async () => undefined }), locks: backendLockFiles });
