import * as fs from "node:fs";
import * as path from "node:path";
import { checkpointDir } from "./checkpoint";
import { type CatalogueEntry, EXIT } from "../model/error-catalogue";

/**
 * A stack file's `encryptionsalt` made with another passphrase than this machine's: Pulumi says
 * "incorrect passphrase" and opens nothing. Copying a stack file from another machine (or a salt that
 * slipped into a commit) does this on every new machine, so the error says what to do.
 */
export class PassphraseMismatchError extends Error {
    /** The CLI's exit code and `--json` error.type for this error (src/model/error-catalogue.ts). */
    get catalogue(): CatalogueEntry {
        return { exitCode: EXIT.prerequisite, type: "PassphraseMismatchError" };
    }
    constructor(
        readonly stackFile: string,
        stack: string,
    ) {
        super(
            `the secrets passphrase in use cannot open the encryptionsalt in ${stackFile} (made with another passphrase, on another machine or with another PULUMI_CONFIG_PASSPHRASE). ` +
                `Set PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE to the passphrase that made it; ` +
                `or, when stack ${stack} has no secrets you need (no \`secure:\` values, nothing in state you must keep), delete the \`encryptionsalt:\` line and run again (a new salt is made)`,
        );
        this.name = "PassphraseMismatchError";
    }
}

export const isIncorrectPassphrase = (e: unknown): boolean =>
    /incorrect passphrase/i.test(String((e as Error)?.message ?? e));

const SALT_LINE = /^encryptionsalt:.*(\r?\n|$)/m;

/**
 * Whether the salt in this stack file protects nothing, so that dropping it loses nothing: the file
 * holds no `secure:` value and a file backend holds no state for the stack (a salt only keys the
 * ciphertexts of config and state). Unknown backends never qualify.
 */
export function saltIsDisposable(stackFile: string, backendDir: string | undefined, stack: string): boolean {
    if (!backendDir) return false;
    let text: string;
    try {
        text = fs.readFileSync(stackFile, "utf8");
    } catch {
        return false;
    }
    if (!SALT_LINE.test(text) || /\bsecure:/.test(text)) return false;
    let names: string[] = [];
    try {
        names = fs.readdirSync(checkpointDir(backendDir));
    } catch {
        return true; // no checkpoint directory: no stack of this project has state here
    }
    return !names.some((n) => n === `${stack}.json` || n.startsWith(`${stack}.json.`));
}

/** Removes the `encryptionsalt:` line, keeping every other byte; written atomically. */
export function dropSalt(stackFile: string): void {
    const text = fs.readFileSync(stackFile, "utf8");
    const tmp = path.join(path.dirname(stackFile), `.${path.basename(stackFile)}.${process.pid}.tmp`);
    fs.writeFileSync(tmp, text.replace(SALT_LINE, ""));
    fs.renameSync(tmp, stackFile);
}

/**
 * Opens the stack with `select`; on "incorrect passphrase" from a salt that protects nothing, drops the
 * salt (Pulumi then makes this machine's) and opens again, else throws PassphraseMismatchError.
 */
export async function openRecoveringSalt<T>(
    select: () => Promise<T>,
    o: {
        stackFile: string;
        shownAs: string;
        backendDir: string | undefined;
        stack: string;
        onNotice: (line: string) => void;
    },
): Promise<T> {
    try {
        return await select();
    } catch (e) {
        if (!isIncorrectPassphrase(e)) throw e;
        if (!saltIsDisposable(o.stackFile, o.backendDir, o.stack))
            throw new PassphraseMismatchError(o.shownAs, o.stack);
        dropSalt(o.stackFile);
        o.onNotice(
            `${path.join("stacks", path.basename(o.stackFile))} carried an encryptionsalt made with another passphrase; the stack has no secrets and no state here, so the salt was dropped and this machine's is used`,
        );
        return await select();
    }
}
