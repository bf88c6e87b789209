/**
 * The one stylesheet of the pages (`/docs/app.css`, `/ui/app.css`): readable on a laptop and a
 * phone, visible keyboard focus, light and dark.
 */
export const PAGE_STYLE = `
:root { color-scheme: light dark; --accent: #2563eb; --muted: #6b7280; font-family: system-ui, sans-serif; }
body { margin: 0 auto; max-width: 72rem; padding: 1rem; line-height: 1.45; }
header { border-bottom: 1px solid var(--muted); margin-bottom: 1rem; }
.settings { display: flex; flex-wrap: wrap; gap: 0.75rem; }
.field { display: flex; flex-direction: column; margin: 0.25rem 0; min-width: 12rem; flex: 1; }
label { font-size: 0.85rem; color: var(--muted); }
input, textarea, button { font: inherit; padding: 0.35rem 0.5rem; }
textarea { font-family: ui-monospace, monospace; width: 100%; box-sizing: border-box; }
button { cursor: pointer; border: 1px solid var(--accent); background: var(--accent); color: white; border-radius: 4px; margin-top: 0.5rem; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
details.op { border: 1px solid var(--muted); border-radius: 6px; margin: 0.5rem 0; padding: 0.25rem 0.75rem; }
details.op > summary { cursor: pointer; padding: 0.25rem 0; overflow-wrap: anywhere; }
.method { display: inline-block; min-width: 4rem; font-weight: 700; text-transform: uppercase; }
.method.get { color: #15803d; } .method.post { color: #1d4ed8; } .method.patch { color: #a16207; } .method.delete { color: #b91c1c; }
.role { font-size: 0.8rem; color: var(--muted); border: 1px solid var(--muted); border-radius: 999px; padding: 0 0.4rem; }
.codes { color: var(--muted); }
table { border-collapse: collapse; width: 100%; display: block; overflow-x: auto; }
th, td { text-align: left; padding: 0.2rem 0.5rem; border-bottom: 1px solid color-mix(in srgb, var(--muted) 40%, transparent); vertical-align: top; }
pre { overflow-x: auto; background: color-mix(in srgb, var(--muted) 12%, transparent); padding: 0.5rem; border-radius: 4px; }
.result:empty { display: none; }
.filters { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: flex-end; }
.table { overflow-x: auto; }
caption { text-align: left; color: var(--muted); font-size: 0.85rem; }
tbody tr[data-phase="unowned"] td, tbody tr[data-phase="absent"] td { color: var(--muted); }
tbody tr[data-successor]:not([data-successor=""]) { background: color-mix(in srgb, #f59e0b 15%, transparent); }
button.link { background: none; border: none; color: var(--accent); padding: 0; margin: 0; text-decoration: underline; font-weight: 600; }
#timeline-panel { border: 1px solid var(--muted); border-radius: 6px; padding: 0 0.75rem 0.5rem; margin: 1rem 0; }
.pager { margin: 0.5rem 0; }
@media (max-width: 40rem) { th:nth-child(6), td:nth-child(6), th:nth-child(7), td:nth-child(7) { display: none; } }
`;
