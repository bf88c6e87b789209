// Malformed requests on every declared claim route (claims and batch): see malformed-fuzz.ts.
import { fuzzMalformed } from "./malformed-fuzz.ts";

fuzzMalformed("claims", (route) => route.tag === "claims");
