import type { GcpProviderConfig } from "./config";
import { GcpApiError, GcpClientOptions, GcpComputeClient, labelFilter } from "./api";
import { GcpCredentialsError } from "./auth";
import type { Checker, CheckerFactory, CheckVerdict } from "../kind";
import { checkEach } from "../shared/check-each";

/**
 * For each zone of the entry: credentials yield a token, and listing at most one managed instance
 * (`labels.egress-project=...`, maxResults=1) succeeds, which proves the project exists, the Compute API is
 * on and the caller may list instances there. One verdict per zone (`zone/<name>`). Options: the common
 * CheckerOptions plus where credentials come from (see docs/gcp.md).
 */
export function gcpChecker(providerName: string, entry: GcpProviderConfig, options: GcpClientOptions = {}): Checker {
    const filter = labelFilter({ "egress-project": "egress" });

    async function checkZone(client: GcpComputeClient, zone: string, signal?: AbortSignal): Promise<CheckVerdict> {
        const target = `zone/${zone}`;
        const started = Date.now();
        try {
            await client.token(signal);
        } catch (e) {
            return {
                target,
                ok: false,
                stage: "credentials",
                message: `provider \`${providerName}\`: ${(e as Error).message}`,
            };
        }
        try {
            const page: any = await client.get(`zones/${zone}/instances`, { filter, maxResults: 1 }, signal);
            return {
                target,
                ok: true,
                message: `provider \`${providerName}\`: project ${entry.project} zone ${zone} is reachable and instances can be listed`,
                details: {
                    project: entry.project,
                    managedInstancesSeen: (page.items ?? []).length,
                    more: Boolean(page.nextPageToken),
                    ms: Date.now() - started,
                },
            };
        } catch (e) {
            return {
                target,
                ok: false,
                stage: stageOf(e),
                message: `provider \`${providerName}\`, project ${entry.project}, zone ${zone}: ${advice(e, entry.project, zone)}`,
            };
        }
    }

    return {
        provider: providerName,
        kind: "gcp",
        async check(signal) {
            // A client per round: it caches its access token, which expires after an hour, and the service
            // keeps one checker for its whole life. The zones of one round share the client (and its token).
            const client = new GcpComputeClient(entry.project, options);
            // Zones are independent: check them concurrently so one slow zone does not hide the others.
            return checkEach(entry.zones, (z) => checkZone(client, z, signal));
        },
    };
}

/** `gcpChecker` is a CheckerFactory; this line keeps it one. */
const _gcpCheckerFactory: CheckerFactory<GcpProviderConfig> = gcpChecker;

function stageOf(e: unknown): string {
    if (e instanceof GcpCredentialsError) return "credentials";
    if (e instanceof GcpApiError) return e.stage;
    return "api";
}

/** The error plus what the operator should do about it. */
function advice(e: unknown, project: string, zone: string): string {
    const msg = (e as Error).message;
    if (!(e instanceof GcpApiError)) return msg;
    switch (e.stage) {
        case "credentials":
            return `${msg}; the credentials were rejected: refresh them (gcloud auth application-default login) or fix GOOGLE_APPLICATION_CREDENTIALS`;
        case "api-disabled":
            return `${msg}; enable the Compute Engine API: gcloud services enable compute.googleapis.com --project ${project}`;
        case "permissions":
            return `${msg}; grant the caller roles/compute.instanceAdmin.v1 (and roles/compute.securityAdmin for firewalls) on ${project}`;
        case "quota":
            return `${msg}; the project is out of quota: request more (IAM & Admin > Quotas) or use another zone or region`;
        case "not-found":
            return `${msg}; check that project ${project} and zone ${zone} exist`;
        default:
            return `${msg}; the Compute API did not answer normally — retry later`;
    }
}
