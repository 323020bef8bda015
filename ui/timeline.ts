import { html } from "./html";
import type { components } from "../clients/typescript/src/api";

/** One sample of GET /v1/timeline, as the API document defines it. */
export type TimelinePoint = components["schemas"]["Timeline"]["points"][number];

const W = 600,
    H = 120,
    PAD = 24;

/** Healthy (solid) and leased (dashed) members of one pool over the last hour, as an inline SVG. */
export function Timeline({ pool, points }: { pool: string; points: TimelinePoint[] }) {
    const end = Date.now(),
        start = end - 3_600_000;
    const series = points
        .map((p) => ({ t: Date.parse(p.at), ...(p.pools[pool] ?? { healthy: 0, leased: 0 }) }))
        .filter((p) => p.t >= start);
    const max = Math.max(1, ...series.map((p) => Math.max(p.healthy, p.leased)));
    const x = (t: number) => PAD + ((t - start) / (end - start)) * (W - 2 * PAD);
    const y = (v: number) => H - PAD - (v / max) * (H - 2 * PAD);
    const line = (key: "healthy" | "leased") =>
        series.map((p, i) => `${i ? "L" : "M"}${x(p.t).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ");
    const last = series[series.length - 1];
    const label = `Pool ${pool}, last hour: ${last ? `${last.healthy} healthy and ${last.leased} leased now` : "no samples yet"}`;
    return html`<figure class="timeline">
        <svg viewBox=${`0 0 ${W} ${H}`} role="img" aria-label=${label}>
            <line class="axis" x1=${PAD} y1=${H - PAD} x2=${W - PAD} y2=${H - PAD} />
            <text x=${PAD} y=${H - 6}>-60 min</text>
            <text x=${W - PAD} y=${H - 6} text-anchor="end">now</text>
            <text x=${4} y=${y(max) + 4}>${max}</text>
            <text x=${4} y=${H - PAD + 4}>0</text>
            ${series.length > 0 && html`<path class="healthy" d=${line("healthy")} /><path class="leased" d=${line("leased")} />`}
            ${series.map((p) => html`<circle class="healthy" cx=${x(p.t)} cy=${y(p.healthy)} r="2" />`)}
        </svg>
        <figcaption>
            <span class="key healthy">healthy</span> <span class="key leased">leased</span> — ${pool}, sampled by the
            service
        </figcaption>
    </figure>`;
}
