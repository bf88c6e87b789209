// Malformed requests on every declared listing route (claims, generations and scopes of a
// namespace, and its stats): see malformed-fuzz.ts. They read the namespace index, so the
// state they must leave unchanged is the index's.
import { fuzzMalformed } from "./malformed-fuzz.ts";

fuzzMalformed("listing", (route) => route.tag === "listing");
