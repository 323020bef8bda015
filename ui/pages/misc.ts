import { useState } from "preact/hooks";
import { api } from "../api";
import { usePoll } from "../hooks";
import { ago, Badge, ErrorNote, html } from "../html";
import { OperationProgress } from "./operation-progress";
import { ClusterPanel } from "./cluster";

/** Recent engine operations; picking one follows its progress live. */
export function OperationsPage() {
    const ops = usePoll(() => api<{ operations: any[] }>("GET", "/v1/operations"), 2000);
    const [open, setOpen] = useState<string>();
    const list = [...(ops.data?.operations ?? [])].reverse();
    return html`<h2>Operations</h2>
        <${ErrorNote} error=${ops.error} />
        <table>
            <caption>
                Newest first
            </caption>
            <thead>
                <tr>
                    <th scope="col">Operation</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Status</th>
                    <th scope="col">Desired</th>
                    <th scope="col">Created</th>
                    <th scope="col">Error</th>
                </tr>
            </thead>
            <tbody>
                ${list.map(
                    (o) =>
                        html`<tr>
                            <th scope="row">
                                <button type="button" class="link" onClick=${() => setOpen(o.id)}>${o.id}</button>
                            </th>
                            <td>${o.kind}</td>
                            <td><${Badge} value=${o.status} /></td>
                            <td>
                                ${Object.entries(o.desired ?? {})
                                    .map(([p, n]) => `${p} → ${n}`)
                                    .join(", ")}
                            </td>
                            <td>${ago(o.createdAt)}</td>
                            <td class="last-error">${o.error ?? ""}</td>
                        </tr>`,
                )}
            </tbody>
        </table>
        ${open && html`<${OperationProgress} key=${open} id=${open} />`}`;
}

/** Provider checks, target by target, and the cluster of replicas serving the stack. */
export function ProvidersPage() {
    const r = usePoll(() => api<{ providers: any[] }>("GET", "/v1/providers/health"), 5000);
    return html`<h2>Provider health</h2>
        <${ErrorNote} error=${r.error} />
        <table>
            <caption>
                Checks per provider target
            </caption>
            <thead>
                <tr>
                    <th scope="col">Provider</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Target</th>
                    <th scope="col">State</th>
                    <th scope="col">Since</th>
                    <th scope="col">Message</th>
                </tr>
            </thead>
            <tbody>
                ${(r.data?.providers ?? []).flatMap((p) =>
                    (p.targets.length ? p.targets : [{ target: "—", ok: false, message: "not checked yet" }]).map(
                        (t: any) =>
                            html`<tr>
                                <th scope="row">${p.provider}</th>
                                <td>${p.kind}</td>
                                <td>${t.target}</td>
                                <td><${Badge} value=${t.ok ? "up" : "down"} /></td>
                                <td>${ago(t.since)}</td>
                                <td>${t.message ?? ""}</td>
                            </tr>`,
                    ),
                )}
            </tbody>
        </table>
        <${ClusterPanel} />`;
}

/** Leases running now (their ids are not shown: an id is what releases a lease). */
export function LeasesPage() {
    const r = usePoll(() => api<{ leases: any[] }>("GET", "/v1/leases"), 2000);
    const list = r.data?.leases ?? [];
    return html`<h2>Active leases</h2>
        <${ErrorNote} error=${r.error} />
        <table>
            <caption>
                ${list.length} active
            </caption>
            <thead>
                <tr>
                    <th scope="col">Proxy</th>
                    <th scope="col">Pool</th>
                    <th scope="col">Target</th>
                    <th scope="col">Leased</th>
                    <th scope="col">Expires</th>
                </tr>
            </thead>
            <tbody>
                ${list.map(
                    (l) =>
                        html`<tr>
                            <th scope="row">${l.proxy}</th>
                            <td>${l.pool}</td>
                            <td>${l.target ?? "any"}</td>
                            <td>${ago(l.leasedAt)}</td>
                            <td>${ago(l.expiresAt)}</td>
                        </tr>`,
                )}
            </tbody>
        </table>`;
}
