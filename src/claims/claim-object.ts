// Placeholder: replaced by the real object.
import { DurableObject } from "cloudflare:workers";

export class ClaimObject extends DurableObject<Env> {}
