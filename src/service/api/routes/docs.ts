import * as path from "node:path";
import { Router } from "express";
import { HttpError } from "../../http/errors";

/** swagger-ui's own files, served from node_modules (no CDN: the docs work on a host without internet). */
const ASSETS: Record<string, string> = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
};
const dist = path.dirname(require.resolve("swagger-ui-dist/package.json"));

const PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>egress API</title><link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div><script src="/docs/swagger-ui-bundle.js"></script><script src="/docs/init.js"></script></body>
</html>
`;
// A file, not an inline script, so a strict Content-Security-Policy in front of the service keeps working.
const INIT = `window.ui = SwaggerUIBundle({ url: "/v1/openapi.json", dom_id: "#swagger-ui", deepLinking: true, persistAuthorization: false });\n`;

/**
 * GET /docs: interactive API docs (swagger-ui) for /v1/openapi.json. Public on purpose, like the
 * document itself: neither holds data. "Try it out" asks for a token and sends it as a bearer header.
 */
export function docsRoutes(): Router {
    const r = Router();
    r.get("/docs", (_req, res) => {
        res.type("html").send(PAGE);
    });
    r.get("/docs/:asset", (req, res) => {
        const asset = req.params.asset as string;
        if (asset === "init.js") return void res.type("application/javascript; charset=utf-8").send(INIT);
        const type = ASSETS[asset];
        if (!type) throw new HttpError("not_found", `no docs asset "${asset}"`);
        res.sendFile(path.join(dist, asset), {
            headers: { "Content-Type": type, "Cache-Control": "public, max-age=3600" },
        });
    });
    return r;
}
