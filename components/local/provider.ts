import * as pulumi from "@pulumi/pulumi";
import { LOCAL_SERVER_SCRIPT, startProxy, stopProxy, isOurProcess, portAnswers } from "./process";
import type { Installation } from "../../src/model/installation";
import { dynamicType, LoadedDynamicResource } from "../shared/dynamic";

/** Type token of the LocalProxyProcess dynamic resource (`pulumi-nodejs:dynamic/<module>:<type>`). */
export const LOCAL_PROCESS_TYPE = dynamicType("egress", "local:Process");

/**
 * Inputs of a LocalProxyProcess. The proxy's script and the node that runs it are not inputs: the provider
 * is the installed egress (components/shared/dynamic.ts), which knows both, and every byte here is kept
 * twice per member in state (issue 33). State written before that holds them; an update drops them.
 */
export interface LocalProcessInputs {
    /** Stable member name, part of the process id. */
    member: string;
    /** Port to bind: 0 = kernel-chosen. */
    requestedPort: number;
    stateDir: string;
    /** Credentials the proxy requires (a secret input; its output is kept secret too). Unset: none. */
    auth?: { username: string; password: string };
    /** The stack's installation (unset in state made before installation ids); the process carries it. */
    installation?: Installation;
    /**
     * More than 1: the member shares a host process with up to this many others (hosts.ts). Unset: a process
     * of its own. A change applies to members created afterwards: running ones stay where they are.
     */
    membersPerProcess?: number;
}

export interface LocalProcessOutputs extends LocalProcessInputs {
    pid: number;
    port: number;
    host: string;
    /** False after a refresh found the process dead or replaced by a foreign one; the next `up` recreates it. */
    running: boolean;
}

/** Inputs of state written before issue 33, which the provider now knows itself. */
const DROPPED_INPUTS = ["serverScript", "nodePath"] as const;

/** Inputs whose change needs a new process. Paths may change (project moved) without a restart. */
const REPLACE_ON = ["member", "requestedPort"] as const;

/**
 * The dynamic provider, run by the engine's dynamic-provider process from the installed egress (state
 * holds only a loader: components/shared/dynamic.ts). Free of captured state all the same: every method
 * gets what it needs from its arguments.
 */
export const localProcessProvider: pulumi.dynamic.ResourceProvider<LocalProcessInputs, LocalProcessOutputs> = {
    async create(inputs) {
        // Deterministic: after a crash mid-create, recovery finds the process by this id (recover.ts).
        const id = inputs.member;
        const started = await startProxy({
            id,
            port: inputs.requestedPort,
            stateDir: inputs.stateDir,
            serverScript: LOCAL_SERVER_SCRIPT,
            nodePath: process.execPath,
            ...(inputs.auth ? { auth: inputs.auth } : {}),
            ...(inputs.installation ? { installation: inputs.installation } : {}),
            ...(inputs.membersPerProcess ? { membersPerProcess: inputs.membersPerProcess } : {}),
        });
        return { id, outs: { ...inputs, pid: started.pid, port: started.port, host: "127.0.0.1", running: true } };
    },

    async read(id, props) {
        const p = props as LocalProcessOutputs;
        const running = isOurProcess(p.pid, id) && (await portAnswers(p.port));
        return { id, props: { ...p, running } };
    },

    async diff(_id, olds, news) {
        const replaces: string[] = REPLACE_ON.filter((k) => olds[k] !== news[k]);
        // The proxy reads its credentials once, at start: new ones need a new process.
        if (JSON.stringify(olds.auth ?? null) !== JSON.stringify(news.auth ?? null)) replaces.push("auth");
        if (olds.running === false) replaces.push("running");
        // A new installation field (state from before installation ids) is recorded in place: the process keeps running.
        // State from before issue 33 carries the script's and node's paths: an update in place drops them.
        const changed =
            replaces.length > 0 ||
            olds.stateDir !== news.stateDir ||
            olds.membersPerProcess !== news.membersPerProcess ||
            DROPPED_INPUTS.some((k) => k in olds) ||
            JSON.stringify(olds.installation ?? null) !== JSON.stringify(news.installation ?? null);
        return { changes: changed, replaces, deleteBeforeReplace: true };
    },

    async update(_id, olds, news) {
        const outs: Record<string, unknown> = { ...olds, ...news };
        for (const k of DROPPED_INPUTS) delete outs[k];
        if (!("membersPerProcess" in news)) delete outs.membersPerProcess; // back to a process each (for new members)
        return { outs: outs as unknown as LocalProcessOutputs };
    },

    async delete(id, props) {
        // Its own port: a forced replace creates the new generation first, maybe on the same shared host.
        await stopProxy(props.pid, id, props.stateDir, props.port);
    },
};

/** One detached proxy process on 127.0.0.1. */
export class LocalProxyProcess extends LoadedDynamicResource {
    declare public readonly pid: pulumi.Output<number>;
    declare public readonly port: pulumi.Output<number>;
    declare public readonly host: pulumi.Output<string>;
    declare public readonly running: pulumi.Output<boolean>;

    constructor(
        name: string,
        args: { [K in keyof LocalProcessInputs]: pulumi.Input<LocalProcessInputs[K]> },
        opts?: pulumi.CustomResourceOptions,
    ) {
        super(
            LOCAL_PROCESS_TYPE,
            name,
            { ...args, pid: undefined, port: undefined, host: undefined, running: undefined },
            { ...opts, additionalSecretOutputs: ["auth"] },
        );
    }
}
