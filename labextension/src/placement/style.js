// The placement view's CSS, injected by render() into its own root.
export const CSS = `
.nbcluster-placement { font: 12px/1.3 var(--jp-ui-font-family, sans-serif);
  color: var(--jp-ui-font-color1, #222); position: relative; }
.nbcluster-placement .nbc-toolbar { display: flex; gap: 6px; align-items: center;
  margin-bottom: 4px; flex-wrap: wrap; }
.nbcluster-placement .nbc-summary { margin-right: auto; }
.nbcluster-placement .nbc-toolbar button { font-size: 11px; padding: 1px 6px; cursor: pointer; }
.nbcluster-placement .nbc-legend { display: flex; gap: 10px; flex-wrap: wrap;
  margin-bottom: 4px; font-family: monospace; font-size: 11px; }
.nbcluster-placement .nbc-swatch { display: inline-block; width: 10px; height: 10px;
  border: 1px solid #777; margin-right: 4px; vertical-align: middle; }
.nbcluster-placement .nbc-frame { position: relative; max-height: 640px; overflow: hidden;
  border: 1px solid var(--jp-border-color2, #ddd); background: var(--jp-layout-color0, #fff); }
.nbcluster-placement .nbc-svg { display: block; cursor: grab; user-select: none; }
.nbcluster-placement .nbc-svg.nbc-dragging { cursor: grabbing; }
.nbcluster-placement .nbc-node rect { stroke: #333; stroke-width: 0.8; }
.nbcluster-placement .nbc-node-client rect { stroke: #777; stroke-dasharray: 3 2; }
.nbcluster-placement .nbc-node-scope rect { stroke-width: 1.6; stroke-dasharray: 4 2; }
.nbcluster-placement .nbc-node-scope { cursor: pointer; font-weight: bold; }
.nbcluster-placement .nbc-node text { font: 11px monospace; fill: #111; pointer-events: none; }
.nbcluster-placement .nbc-group text, .nbcluster-placement .nbc-scope-box text {
  font: 11px monospace; fill: #444; }
.nbcluster-placement .nbc-group rect { stroke-width: 1.2; }
.nbcluster-placement .nbc-scope-box rect { stroke-dasharray: 3 3; cursor: pointer; }
.nbcluster-placement .nbc-scope-box { cursor: pointer; }
.nbcluster-placement path.nbc-edge { fill: none; stroke: #555; stroke-width: 1; }
.nbcluster-placement path.nbc-edge-control { stroke: #999; stroke-dasharray: 3 3; }
.nbcluster-placement path.nbc-edge-transfer { fill: none; stroke: #C0392B; stroke-width: 2.4;
  stroke-dasharray: 7 3; }
.nbcluster-placement .nbc-edge-label { font: 10px monospace; fill: #555; }
.nbcluster-placement .nbc-transfer-label { fill: #C0392B; font-weight: bold;
  paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.nbcluster-placement .nbc-tooltip { position: absolute; display: none; pointer-events: none;
  background: rgba(255, 255, 240, 0.97); border: 1px solid #888; border-radius: 3px;
  padding: 4px 6px; font: 11px monospace; white-space: pre; z-index: 10; color: #111; }
`;
