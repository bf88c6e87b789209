// Malformed requests on every declared store-key scope route (coord): see malformed-fuzz.ts.
import { fuzzMalformed } from "./malformed-fuzz.ts";

fuzzMalformed(
  "store-key scope",
  (route) => route.tag === "coord" && route.path.includes("/stores/{objectStoreId}/keys/"),
);
