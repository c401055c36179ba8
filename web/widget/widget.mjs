// Switchboard web widget v1, as an ES module: the same API as widget.js
// (which this imports and which defines window.Switchboard), for pages and
// bundlers that import rather than include scripts. docs/widget.md.
//
//   import { start, join, mount } from "https://HOST/widget.mjs";
import "./widget.js";

const Switchboard = globalThis.Switchboard;
// A module has no document.currentScript: tell the widget its origin, the
// default baseUrl of start().
Switchboard._setBase(import.meta.url);

export const version = Switchboard.version;
export const start = Switchboard.start;
export const join = Switchboard.join;
export const mount = Switchboard.mount;
export { Switchboard };
export default Switchboard;
