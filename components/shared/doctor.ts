import * as fs from "node:fs";
import * as path from "node:path";
import type { DoctorEnv, DoctorFinding } from "../kind";
import { which } from "./which";

/**
 * The provider plugin the installed SDK (`@pulumi/<plugin>`) asks the engine for: the same version, read
 * from its package.json so an SDK upgrade changes the advice with it. The engine downloads it on first
 * use unless PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION is set; offline it must be installed beforehand.
 */
export function pluginFinding(plugin: string, env: DoctorEnv): DoctorFinding {
    const version = sdkVersion(plugin, env.packageRoot);
    const dir = path.join(env.pulumiHome, "plugins");
    const want = `resource-${plugin}-v${version}`;
    const check = `${plugin}: provider plugin ${version}`;
    const has = fs.existsSync(path.join(dir, want));
    const install = `PULUMI_HOME=${env.pulumiHome} ${path.join(env.binDir, "pulumi")} plugin install resource ${plugin} ${version}`;
    // A plugin on PATH wins over the plugin cache. egress's tests put their own build there.
    const ambient = which(`pulumi-resource-${plugin}`);
    if (ambient && TEST_BUILD.test(path.dirname(ambient)))
        return {
            check,
            ok: false,
            detail: `the engine would use ${ambient} from PATH: egress's test build (scripts/build-k8s.sh, an unreleased provider commit run against a simulated cluster), not the released plugin`,
            fix: `for a real cluster, take ${path.dirname(ambient)} off PATH and install the released plugin: ${install}`,
        };
    if (ambient) return { check, ok: true, detail: `the engine uses ${ambient} from PATH` };
    if (has) return { check, ok: true, detail: `installed in ${dir}` };
    // Missing is only a problem when the engine may not fetch it: with acquisition on it downloads the
    // plugin on first use, and doctor still names the command for a machine that turns out to be offline.
    if (process.env.PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION !== "true")
        return {
            check,
            ok: true,
            detail: `not installed yet: the engine downloads it on first use (offline, run: ${install})`,
        };
    return {
        check,
        ok: false,
        detail: `no ${want} in ${dir} and automatic plugin acquisition is disabled`,
        fix: `on a machine with internet access: ${install}`,
    };
}

/** The bin directory of scripts/build-k8s.sh's cache: `<cache>/egress-k8s/<key>/bin`. */
const TEST_BUILD = /[\\/]egress-k8s[\\/][0-9a-f]{16}[\\/]bin$/;

function sdkVersion(plugin: string, packageRoot: string): string {
    const file = require.resolve(`@pulumi/${plugin}/package.json`, { paths: [packageRoot] });
    return (JSON.parse(fs.readFileSync(file, "utf8")) as { version: string }).version;
}
