/** The crash matrix (test/helpers/crash-matrix.ts) on the file backend: every case. */
import { fileBackend } from "../helpers/backends";
import { crashMatrix } from "../helpers/crash-matrix";

crashMatrix(fileBackend);
