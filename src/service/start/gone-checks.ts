/**
 * The kinds' liveness hooks for the service's reconciler, one per provider entry. Separate from
 * parts.ts (which only builds and connects parts) because this part has its own state and lifecycle:
 * it is rebuilt from the stack's installation after every operation.
 */
import type { Logger } from "pino";
import type { ProviderConfig } from "../../config";
import { PROJECT, type StackDriver } from "../../engine";
import { goneCheckFor } from "../../../components/registry";
import type { GoneCheck } from "../../../components/kind";

/**
 * The kinds' liveness hooks (is a member gone outside egress?), one per provider entry. They know the
 * stack's installation, so they are rebuilt after every operation: a new stack's first `up` records it.
 */
export class GoneChecks {
    checks = new Map<string, GoneCheck>();
    private providers: Record<string, ProviderConfig> = {};

    constructor(
        private readonly driver: StackDriver,
        private readonly runDir: string,
        private readonly stack: string,
        private readonly log: Logger,
    ) {}

    async setProviders(providers: Record<string, ProviderConfig>): Promise<void> {
        this.providers = providers;
        await this.rebuild();
    }

    async rebuild(): Promise<void> {
        const { installation } = await this.driver.installation();
        const { runDir, stack, log } = this;
        this.checks = new Map(
            Object.entries(this.providers).flatMap(([name, entry]) => {
                const check = goneCheckFor({ runDir, project: PROJECT, stack, installation, entry, log });
                return check ? [[name, check] as const] : [];
            }),
        );
    }
}
