/**
 * The Pulumi SDK's closure serializer, loaded when it first serializes. Requiring `@pulumi/pulumi` loads
 * the TypeScript compiler (to parse functions) and npm's Arborist (to list a closure's packages) at once:
 * about two thirds of the SDK's load, 0.6 s of CPU, in every process that loads it. Only a program that
 * serializes a function (the provider loaders, src/program.ts) uses them; a dynamic-provider host, and a
 * CLI command that reads a stack without running the program, never do.
 *
 * Importing this module (first, in src/cli.ts; with `--require` in the provider host's launcher,
 * scripts/pulumi-resource-pulumi-nodejs) makes the SDK's own `require("typescript")` and
 * `require("@npmcli/arborist")` return stand-ins that load the real module on first use. Nothing else is
 * touched: any other module, and these two required from outside the SDK, load as usual.
 */
import Module = require("node:module");

type Loader = (request: string, parent: NodeJS.Module | undefined, isMain: boolean) => unknown;
const moduleInternals = Module as unknown as { _load: Loader & { egressLazy?: true } };

/** TypeScript, loaded on the first property read (the serializer reads `ts.<name>` when it parses). */
function lazyTypescript(load: () => object): object {
    let real: object | undefined;
    const target = () => (real ??= load());
    return new Proxy(
        {},
        {
            get: (_, key) => Reflect.get(target(), key),
            has: (_, key) => Reflect.has(target(), key),
            ownKeys: () => Reflect.ownKeys(target()),
            getOwnPropertyDescriptor: (_, key) => {
                const d = Reflect.getOwnPropertyDescriptor(target(), key);
                return d && { ...d, configurable: true };
            },
        },
    );
}

/**
 * Arborist, loaded when the serializer constructs one (`new arborist.Arborist(...)`). Marked as an ES
 * module so the SDK's `__importStar` keeps this object instead of copying every export (which would load
 * it).
 */
function lazyArborist(load: () => { Arborist: unknown }): object {
    let real: { Arborist: unknown } | undefined;
    return {
        __esModule: true,
        get Arborist() {
            return (real ??= load()).Arborist;
        },
    };
}

const SDK_FILE = /[\\/]@pulumi[\\/]pulumi[\\/]/;

export function installLazyClosure(): void {
    const original = moduleInternals._load;
    if (original.egressLazy) return;
    const patched = function (this: unknown, request: string, parent: NodeJS.Module | undefined, isMain: boolean) {
        if (parent && SDK_FILE.test(parent.filename ?? "")) {
            const load = () => original.call(this, request, parent, isMain) as never;
            if (request === "typescript") return lazyTypescript(load);
            if (request === "@npmcli/arborist") return lazyArborist(load);
        }
        return original.call(this, request, parent, isMain);
    } as Loader & { egressLazy?: true };
    patched.egressLazy = true;
    moduleInternals._load = patched;
}

installLazyClosure();
