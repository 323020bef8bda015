import { type CatalogueEntry, EXIT } from "../../model/error-catalogue";

/** The store could not be reached or answered too late: HTTP 503 `store_unavailable` with Retry-After. */
export class StoreUnavailableError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.unavailable, type: "StoreUnavailableError" };
    }
    constructor(
        message: string,
        readonly retryAfterSeconds: number,
    ) {
        super(message);
        this.name = "StoreUnavailableError"; // the CLI's --json `error.type`, as every other named error
    }
}
