// Malformed requests on every declared volume-key scope route (coord): see malformed-fuzz.ts.
import { fuzzMalformed } from "./malformed-fuzz.ts";

fuzzMalformed("volume-key scope", (route) => route.tag === "coord" && route.path.includes("/volumes/{volumeId}/keys/"));
