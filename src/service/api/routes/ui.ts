import * as fs from "node:fs";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../../../engine";
import express, { Router } from "express";
import { isDashboardPage } from "../dashboard-pages";
import { HttpError } from "../../http/errors";

/** Where `npm run build` (scripts/build-ui.mjs) puts the bundle: dist/ui, from the package root. */
export const UI_DIR = path.join(PACKAGE_ROOT, "dist", "ui");

/** Paths that belong to the API or to operators' tools, never to the dashboard. */
const NOT_UI = /^\/(v1|healthz|readyz|metrics)(\/|$)/;

/**
 * Only the bundle's own scripts and styles, and fetches to this origin: the dashboard holds a token,
 * so nothing else may run in its page.
 */
const CSP =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The dashboard: static files with no token (all data comes from /v1 with one), its pages answered with
 * index.html, and any other GET outside /v1 from a browser with index.html as a 404 (the app then shows
 * its 404 page).
 */
export function uiRoutes(dir = UI_DIR): Router {
    const r = Router();
    const index = path.join(dir, "index.html");
    const page = (status: number) => (req: express.Request, res: express.Response) => {
        if (!fs.existsSync(index))
            throw new HttpError(
                "dashboard_not_built",
                `the dashboard is not built (${index} is missing): run \`npm run build\``,
            );
        res.status(status).setHeader("Content-Security-Policy", CSP);
        res.setHeader("Cache-Control", "no-cache");
        res.sendFile(index);
    };
    r.use((req, res, next) => {
        if ((req.method !== "GET" && req.method !== "HEAD") || NOT_UI.test(req.path)) return next();
        if (isDashboardPage(req.path)) return page(200)(req, res);
        next();
    });
    r.use(
        "/assets",
        express.static(path.join(dir, "assets"), {
            index: false,
            fallthrough: true,
            setHeaders: (res) => res.setHeader("Cache-Control", "no-cache"),
        }),
    );
    // A browser (it asks for HTML) gets the app's 404 page; API clients (curl's */*, fetch) keep the JSON 404.
    r.use((req, res, next) => {
        if (
            (req.method !== "GET" && req.method !== "HEAD") ||
            NOT_UI.test(req.path) ||
            !/\btext\/html\b/.test(req.headers.accept ?? "")
        )
            return next();
        page(404)(req, res);
    });
    return r;
}
