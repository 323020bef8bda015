import { z } from "zod";

/**
 * The one rule for a sticky-session key, here and inside the gateway's proxy username. No `_`: the
 * gateway's username grammar separates its options with it (`<pool>_session_<key>_target_<host>`).
 */
export const SESSION_KEY_RULE = {
    pattern: /^[A-Za-z0-9.~-]*$/,
    max: 128,
    text: "1–128 letters, digits, '-', '.' or '~' (no '_': the gateway's proxy username separates options with it)",
};
export const sessionKeySchema = z
    .string()
    .min(1, { message: "must not be empty" })
    .max(SESSION_KEY_RULE.max, { message: `must be at most ${SESSION_KEY_RULE.max} characters` })
    .regex(SESSION_KEY_RULE.pattern, { message: `may contain only ${SESSION_KEY_RULE.text}` });
