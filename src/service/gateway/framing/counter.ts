import { LengthCounter, UntilCloseCounter, type BodyCounter } from "./body";
import { ChunkedCounter } from "./chunked";
import { DEFAULT_LIMITS, type FramingLimits } from "./limits";
import type { BodyFraming } from "./head";

/** The counter for a head's framing. */
export function bodyCounter(framing: BodyFraming, limits: FramingLimits = DEFAULT_LIMITS): BodyCounter {
    switch (framing.kind) {
        case "none":
            return new LengthCounter(0);
        case "length":
            return new LengthCounter(framing.length);
        case "chunked":
            return new ChunkedCounter(limits);
        case "close":
            return new UntilCloseCounter();
    }
}
