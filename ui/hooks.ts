import { useEffect, useState } from "preact/hooks";

/** Loads `fn` now and every `everyMs`; keeps the last good data beside the last error. */
export function usePoll<T>(
    fn: () => Promise<T>,
    everyMs: number,
    deps: unknown[] = [],
): { data?: T; error?: Error; reload: () => void } {
    const [state, setState] = useState<{ data?: T; error?: Error }>({});
    const [tick, setTick] = useState(0);
    useEffect(() => {
        let live = true;
        const load = () =>
            fn().then(
                (data) => live && setState({ data }),
                (error: Error) => live && setState((s) => ({ data: s.data, error })),
            );
        load();
        const t = setInterval(load, everyMs);
        return () => {
            live = false;
            clearInterval(t);
        };
    }, [...deps, tick]);
    return { ...state, reload: () => setTick((n) => n + 1) };
}
