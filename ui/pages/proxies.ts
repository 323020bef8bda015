import { useState } from "preact/hooks";
import { api } from "../api";
import { usePoll } from "../hooks";
import { ago, Badge, ErrorNote, html } from "../html";
import type { components } from "../../clients/typescript/src/api";

type Proxy = components["schemas"]["Proxy"];

const HEALTH = ["", "healthy", "unhealthy", "unknown"];
const LIFECYCLE = ["", "provisioning", "ready", "draining", "failed"];

function Select({
    label,
    value,
    options,
    onChange,
}: {
    label: string;
    value: string;
    options: string[];
    onChange: (v: string) => void;
}) {
    return html`<label
        >${label}
        <select value=${value} onChange=${(e: Event) => onChange((e.target as HTMLSelectElement).value)}>
            ${options.map((o) => html`<option value=${o}>${o || "any"}</option>`)}
        </select></label
    >`;
}

/** Every member with health, egress IP, probe latency, lease state, lifecycle and last error; filterable. */
export function ProxiesPage() {
    const [f, setF] = useState({ pool: "", state: "", lifecycle: "", text: "" });
    const query = new URLSearchParams(
        Object.entries({ pool: f.pool, state: f.state, lifecycle: f.lifecycle }).filter(([, v]) => v),
    ).toString();
    const proxies = usePoll(() => api<{ proxies: Proxy[] }>("GET", `/v1/proxies${query ? `?${query}` : ""}`), 1000, [
        query,
    ]);
    const pools = usePoll(() => api<{ pools: { name: string }[] }>("GET", "/v1/pools"), 30_000);
    const text = f.text.trim().toLowerCase();
    const rows = (proxies.data?.proxies ?? []).filter(
        (p) => !text || [p.id, p.host, p.egressIp ?? "", p.lastError ?? ""].some((s) => s.toLowerCase().includes(text)),
    );
    const set = (k: keyof typeof f) => (v: string) => setF({ ...f, [k]: v });
    return html`<h2>Proxies</h2>
        <form class="filters" role="search" aria-label="Filter proxies" onSubmit=${(e: Event) => e.preventDefault()}>
            <${Select}
                label="Pool"
                value=${f.pool}
                options=${["", ...(pools.data?.pools ?? []).map((p) => p.name)]}
                onChange=${set("pool")}
            />
            <${Select} label="Health" value=${f.state} options=${HEALTH} onChange=${set("state")} />
            <${Select} label="Lifecycle" value=${f.lifecycle} options=${LIFECYCLE} onChange=${set("lifecycle")} />
            <label
                >Search
                <input
                    type="search"
                    value=${f.text}
                    onInput=${(e: Event) => set("text")((e.target as HTMLInputElement).value)}
            /></label>
        </form>
        <${ErrorNote} error=${proxies.error} />
        <table>
            <caption>
                ${rows.length} ${rows.length === 1 ? "proxy" : "proxies"}
            </caption>
            <thead>
                <tr>
                    <th scope="col">Proxy</th>
                    <th scope="col">Pool</th>
                    <th scope="col">Address</th>
                    <th scope="col">Health</th>
                    <th scope="col">Egress IP</th>
                    <th scope="col">Probe latency</th>
                    <th scope="col">Lease</th>
                    <th scope="col">Lifecycle</th>
                    <th scope="col">Last error</th>
                </tr>
            </thead>
            <tbody>
                ${rows.map(
                    (p) =>
                        html`<tr data-proxy=${p.id}>
                            <th scope="row">${p.id}</th>
                            <td>${p.pool}</td>
                            <td>${p.host ? `${p.host}:${p.port}` : "—"}</td>
                            <td><${Badge} value=${p.health} /></td>
                            <td>${p.egressIp ?? "—"}</td>
                            <td>${p.probeLatencyMs === undefined ? "—" : `${p.probeLatencyMs.toFixed(1)} ms`}</td>
                            <td>${p.leased ? "leased" : "free"}</td>
                            <td>
                                <${Badge}
                                    value=${p.lifecycle}
                                />${p.drainingUntil ? html` until ${ago(p.drainingUntil)}` : ""}
                            </td>
                            <td class="last-error">${p.lastError ?? ""}</td>
                        </tr>`,
                )}
            </tbody>
        </table>`;
}
