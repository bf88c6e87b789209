/**
 * Encode a value at most once: a mutation's record and events are rendered for the wire by
 * several consumers (the response, the stored event, the watchers, the listing outbox), and
 * each gets the same rendering, computed by the first.
 *
 * Guarantees: for one object, every call returns the same (`===`) result, the first
 * call's; memory is held only while the object lives (a WeakMap).
 * Does not: notice a mutation of the object after its first encoding — it serves values
 * that are never changed in place (the machines make a new record and event per change).
 */
export function encodeOnce<Value extends object, Encoded>(
  encode: (value: Value) => Encoded,
): (value: Value) => Encoded {
  const encoded = new WeakMap<Value, Encoded>();
  return (value) => {
    if (encoded.has(value)) return encoded.get(value) as Encoded;
    const result = encode(value);
    encoded.set(value, result);
    return result;
  };
}
