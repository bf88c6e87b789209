/**
 * A small line chart as a standalone SVG document (no library, no fonts to install): used by
 * bench/soak.mjs to draw resident memory over time.
 *
 * Guarantees: the output is a complete, self-contained SVG 1.1 file (viewBox, white
 * background, text in the generic sans-serif family) that browsers and GitHub render; axes
 * start at 0 so a change is never exaggerated; an optional shaded band (e.g. ±10 % around a
 * baseline) is drawn under the lines; names and labels are XML-escaped.
 * Does not: pick "nice" tick values beyond round steps, or draw more than a handful of
 * series legibly.
 */

/** @param {string} s */
function esc(s) {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");
}

/** @param {number} max @param {number} ticks @returns {number} a round step giving about `ticks` ticks */
function step(max, ticks) {
  const raw = max / ticks;
  const p = 10 ** Math.floor(Math.log10(raw || 1));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/**
 * @typedef {object} Series
 * @property {string} name
 * @property {string} color CSS color
 * @property {[number, number][]} points x, y
 * @property {boolean} [dashed]
 */

/**
 * @param {object} o
 * @param {string} o.title
 * @param {string} o.xLabel
 * @param {string} o.yLabel
 * @param {Series[]} o.series
 * @param {{ from: number, to: number, fromX: number, label: string }} [o.band] shaded y range from x = fromX on
 * @param {number} [o.width]
 * @param {number} [o.height]
 * @returns {string} the SVG document
 */
export function lineChart({ title, xLabel, yLabel, series, band, width = 800, height = 420 }) {
  const pad = { left: 64, right: 170, top: 40, bottom: 50 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const xMax = Math.max(1, ...xs);
  const yStep = step(Math.max(1, ...ys, band?.to ?? 0) * 1.1, 6);
  const yMax = Math.ceil((Math.max(1, ...ys, band?.to ?? 0) * 1.1) / yStep) * yStep;
  const xStep = step(xMax, 8);
  /** @param {number} x */
  const X = (x) => pad.left + (x / xMax) * w;
  /** @param {number} y */
  const Y = (y) => pad.top + h - (y / yMax) * h;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${pad.left}" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`,
  ];
  if (band) {
    const bx = X(band.fromX);
    out.push(
      `<rect x="${bx.toFixed(1)}" y="${Y(band.to).toFixed(1)}" width="${(pad.left + w - bx).toFixed(1)}" height="${(Y(band.from) - Y(band.to)).toFixed(1)}" fill="#2a7" fill-opacity="0.12"/>`,
    );
  }
  for (let y = 0; y <= yMax + 1e-9; y += yStep) {
    out.push(
      `<line x1="${pad.left}" x2="${pad.left + w}" y1="${Y(y).toFixed(1)}" y2="${Y(y).toFixed(1)}" stroke="#ddd"/>`,
      `<text x="${pad.left - 6}" y="${(Y(y) + 4).toFixed(1)}" text-anchor="end">${Math.round(y)}</text>`,
    );
  }
  for (let x = 0; x <= xMax + 1e-9; x += xStep) {
    out.push(
      `<line x1="${X(x).toFixed(1)}" x2="${X(x).toFixed(1)}" y1="${pad.top + h}" y2="${pad.top + h + 4}" stroke="#333"/>`,
      `<text x="${X(x).toFixed(1)}" y="${pad.top + h + 18}" text-anchor="middle">${Math.round(x)}</text>`,
    );
  }
  out.push(
    `<line x1="${pad.left}" x2="${pad.left + w}" y1="${pad.top + h}" y2="${pad.top + h}" stroke="#333"/>`,
    `<line x1="${pad.left}" x2="${pad.left}" y1="${pad.top}" y2="${pad.top + h}" stroke="#333"/>`,
    `<text x="${pad.left + w / 2}" y="${height - 10}" text-anchor="middle">${esc(xLabel)}</text>`,
    `<text transform="translate(16 ${pad.top + h / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`,
  );
  series.forEach((s, i) => {
    const d = s.points.map(([x, y], j) => `${j === 0 ? "M" : "L"}${X(x).toFixed(1)} ${Y(y).toFixed(1)}`).join(" ");
    const dash = s.dashed ? ' stroke-dasharray="5 4"' : "";
    out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${dash}/>`);
    const ly = pad.top + 10 + i * 20;
    out.push(
      `<line x1="${pad.left + w + 14}" x2="${pad.left + w + 36}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${dash}/>`,
      `<text x="${pad.left + w + 42}" y="${ly + 4}">${esc(s.name)}</text>`,
    );
  });
  if (band) {
    const ly = pad.top + 10 + series.length * 20;
    out.push(
      `<rect x="${pad.left + w + 14}" y="${ly - 6}" width="22" height="12" fill="#2a7" fill-opacity="0.12"/>`,
      `<text x="${pad.left + w + 42}" y="${ly + 4}">${esc(band.label)}</text>`,
    );
  }
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
