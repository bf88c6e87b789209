// Malformed requests on every declared object-store scope route (coord): see malformed-fuzz.ts.
import { fuzzMalformed } from "./malformed-fuzz.ts";

fuzzMalformed("store scope", (route) => route.tag === "coord" && !route.path.includes("/keys/"));
