/**
 * The pages' one clock, spliced into their scripts: the browser's wall clock, read in this
 * one place and passed on as `nowMs` (countdowns are computed from it). A skewed browser
 * clock skews a countdown on screen, never a lease: expiry is decided by the server's clock.
 */
export const PAGE_CLOCK = String.raw`
  function nowMs() { return Date.now(); }
`;
