// Malformed requests on every declared generation route: see malformed-fuzz.ts.
import { fuzzMalformed } from "./malformed-fuzz.ts";

fuzzMalformed("generations", (route) => route.tag === "generations");
