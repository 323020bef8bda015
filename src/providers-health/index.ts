import * as path from "node:path";
import type { ProviderConfig, ProviderKind } from "../config";
import { PACKAGE_ROOT } from "../engine/env";
import { localChecker } from "./local";
import { gcpChecker } from "./gcp";
import { kubernetesChecker } from "./kubernetes";
import type { Checker, CheckerFactory } from "./types";

export type { Checker, CheckVerdict } from "./types";

/** The Checker for one provider entry, by kind. `runDir` is where local proxies keep their files. */
export function checkerFor(providerName: string, entry: ProviderConfig, runDir: string, stack: string): Checker {
    const factories: Record<ProviderKind, CheckerFactory<any>> = {
        local: localChecker({ serverScript: path.join(PACKAGE_ROOT, "dist", "components", "local", "proxy-server.js"), stateDir: path.join(runDir, "local", stack) }),
        // Loaded on use: the KVM kind pulls in libvirt tooling checks nobody else needs.
        kvm: (...args: Parameters<CheckerFactory<any>>) => require("./kvm").kvmChecker(...args),
        gcp: gcpChecker,
        kubernetes: kubernetesChecker,
    };
    return factories[entry.type](providerName, entry);
}
