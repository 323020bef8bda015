import type { Stack } from "@pulumi/pulumi/automation";

/**
 * The automation API's `up`, `refresh` and `destroy` start two more CLI runs after the engine's own:
 * `stack output --show-secrets` and `stack history`, each loading the whole checkpoint and deriving the
 * passphrase's key again. That is about a second at 300 members and grows with the fleet (issue 33),
 * for a summary egress never reads and outputs it reads from state itself (driver.ts, `proxies`). The
 * stack returned runs the same commands and answers those two with nothing; everything else is `stack`'s.
 */
export function withoutReadback(stack: Stack): Stack {
    const lean = Object.create(stack) as Stack;
    lean.outputs = async () => ({});
    lean.info = async () => undefined;
    return lean;
}
