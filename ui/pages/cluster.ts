import { api } from "../api";
import { usePoll } from "../hooks";
import { ago, Badge, ErrorNote, html } from "../html";

/**
 * The replicas of this stack and which one leads (GET /v1/cluster): one row with the memory store. Two
 * scopes at once mean a stack file edited on some homes only (docs/operations.md).
 */
export function ClusterPanel() {
    const r = usePoll(() => api<{ store: string; leader: any; replicas: any[] }>("GET", "/v1/cluster"), 5000);
    const c = r.data;
    return html`<h2>Cluster</h2>
        <${ErrorNote} error=${r.error} />
        <table>
            <caption>
                ${c ? `${c.replicas.length} replica(s), store ${c.store}` : ""}
                ${c?.leader ? html`; leader since ${ago(c.leader.since)} (token ${c.leader.token})` : ""}
            </caption>
            <thead>
                <tr>
                    <th scope="col">Replica</th>
                    <th scope="col">Role</th>
                    <th scope="col">Host</th>
                    <th scope="col">Address</th>
                    <th scope="col">Version</th>
                    <th scope="col">Last heartbeat</th>
                    <th
                        scope="col"
                        title="What replicas of the stack share: one home, or one stack config on a shared backend"
                    >
                        Scope
                    </th>
                </tr>
            </thead>
            <tbody>
                ${(c?.replicas ?? []).map(
                    (x) =>
                        html`<tr>
                            <th scope="row">${x.id}</th>
                            <td><${Badge} value=${x.leader ? "leader" : "follower"} /></td>
                            <td>${x.host}</td>
                            <td>${x.url}</td>
                            <td>${x.version}</td>
                            <td>${ago(x.lastHeartbeat)}</td>
                            <td>${x.scope ?? x.home ?? ""}</td>
                        </tr>`,
                )}
            </tbody>
        </table>`;
}
