/**
 * A response as plain data: what a Durable Object returns over RPC, what an operation-id
 * replay returns byte for byte, what the router sends and what the in-memory backends decode.
 *
 * Guarantees: safe to store, to send over RPC and to replay. `body` is typed `object | null`
 * (or narrower), never `unknown`, because workerd's RPC typings turn a method returning
 * `unknown` into `never` on the stub.
 * Does not: decide the status of an error (errors.ts's table does).
 */
export interface WireResponse<Body extends object | null = object | null> {
  status: number;
  body: Body;
}
