/**
 * The installation identity in state: a dynamic resource with nothing outside state. Its `installation`
 * output is the stack's installation id (src/model/installation.ts); the engine keeps it with the stack's
 * state, so it survives restarts and moves with the backend.
 */
import * as pulumi from "@pulumi/pulumi";
import { dynamicType, LoadedDynamicResource } from "../components/shared/dynamic";

/** Type token of the identity resource (`pulumi-nodejs:dynamic/<module>:<type>`). */
export const IDENTITY_TYPE = dynamicType("egress", "installation:Identity");

export interface IdentityInputs {
    /** The id to record when the resource is created; once recorded, the recorded one wins (check). */
    installation: string;
    /** True when the id was adopted from a stack made before installation ids. */
    legacy: boolean;
}

/**
 * Free of captured state. `check` pins a recorded id: whatever a later run proposes, the inputs stay the
 * recorded ones, so the id never changes while the resource exists and `diff` never sees a change.
 */
export const identityProvider: pulumi.dynamic.ResourceProvider<IdentityInputs, IdentityInputs> = {
    async check(olds, news) {
        const recorded = olds as Partial<IdentityInputs> | undefined;
        if (recorded && typeof recorded.installation === "string")
            return { inputs: { installation: recorded.installation, legacy: recorded.legacy === true } };
        if (!/^[0-9a-f]{8}$/.test(String(news.installation)))
            return {
                inputs: news,
                failures: [
                    {
                        property: "installation",
                        reason: `an installation id is 8 lowercase hex digits, got ${JSON.stringify(news.installation)}`,
                    },
                ],
            };
        return { inputs: { installation: news.installation, legacy: news.legacy === true } };
    },
    // Nothing exists outside state: creating it cannot half-fail, and deleting it has nothing to remove.
    async create(inputs) {
        return { id: inputs.installation, outs: { installation: inputs.installation, legacy: inputs.legacy } };
    },
    async diff(_id, olds, news) {
        return { changes: olds.installation !== news.installation || olds.legacy !== news.legacy };
    },
    async update(_id, olds) {
        return { outs: olds };
    },
    async read(id, props) {
        return { id, props: props as IdentityInputs };
    },
    async delete() {
        /* only state holds it */
    },
};

/** The stack's installation identity (one per stack, named `installation`). */
export class InstallationIdentity extends LoadedDynamicResource {
    declare public readonly installation: pulumi.Output<string>;
    declare public readonly legacy: pulumi.Output<boolean>;

    constructor(name: string, args: IdentityInputs, opts?: pulumi.CustomResourceOptions) {
        super(IDENTITY_TYPE, name, { ...args }, opts);
    }
}
