// The placement view's CSS, injected by render() into its own root. Text and
// lines take JupyterLab's theme variables (light and dark themes); node labels
// get black or white by their fill's contrast (colors.js), set as a style.
export const CSS = `
.nbcluster-placement { font: 12px/1.3 var(--jp-ui-font-family, sans-serif);
  color: var(--jp-ui-font-color0, #111); position: relative; }
.nbcluster-placement .nbc-toolbar { display: flex; gap: 6px; align-items: center;
  margin-bottom: 4px; flex-wrap: wrap; }
.nbcluster-placement .nbc-summary { margin-right: auto; }
.nbcluster-placement .nbc-toolbar button, .nbcluster-placement .nbc-toolbar select,
.nbcluster-placement .nbc-toolbar input { font-size: 11px; padding: 1px 6px;
  color: var(--jp-ui-font-color0, #111); background: var(--jp-layout-color1, #fff);
  border: 1px solid var(--jp-border-color1, #bbb); border-radius: 2px; }
.nbcluster-placement .nbc-toolbar button { cursor: pointer; }
.nbcluster-placement .nbc-search { width: 14em; }
.nbcluster-placement .nbc-search-status { font-size: 11px; color: var(--jp-ui-font-color1, #333);
  min-width: 5em; }
.nbcluster-placement .nbc-legend { display: flex; gap: 10px; flex-wrap: wrap; align-items: center;
  margin-bottom: 4px; font-family: var(--jp-code-font-family, monospace); font-size: 11px; }
.nbcluster-placement .nbc-swatch { display: inline-block; width: 10px; height: 10px;
  border: 1px solid var(--jp-border-color1, #777); margin-right: 4px; vertical-align: middle; }
.nbcluster-placement .nbc-gradient { display: inline-block; width: 120px; height: 10px;
  border: 1px solid var(--jp-border-color1, #777); vertical-align: middle; margin: 0 4px; }
.nbcluster-placement .nbc-frame { position: relative; overflow: hidden;
  border: 1px solid var(--jp-border-color2, #ddd); background: var(--jp-layout-color0, #fff); }
.nbcluster-placement .nbc-svg { display: block; cursor: grab; user-select: none; }
.nbcluster-placement .nbc-svg.nbc-dragging { cursor: grabbing; }
.nbcluster-placement .nbc-node rect { stroke: var(--jp-ui-font-color1, #333); stroke-width: 0.8; }
.nbcluster-placement .nbc-node-client rect { stroke-dasharray: 3 2; }
.nbcluster-placement .nbc-node-scope rect { stroke-width: 1.6; stroke-dasharray: 4 2; }
.nbcluster-placement .nbc-node-scope { cursor: pointer; font-weight: bold; }
.nbcluster-placement .nbc-node text { font: 11px monospace; pointer-events: none; }
.nbcluster-placement .nbc-node.nbc-found rect { stroke: var(--jp-brand-color1, #1976d2);
  stroke-width: 4; stroke-dasharray: none; }
.nbcluster-placement .nbc-group text, .nbcluster-placement .nbc-scope-box text {
  font: 11px monospace; fill: var(--jp-ui-font-color0, #111); }
.nbcluster-placement .nbc-group rect { stroke-width: 1.2; stroke: var(--jp-border-color1, #888); }
.nbcluster-placement .nbc-scope-box rect { stroke-dasharray: 3 3; cursor: pointer; }
.nbcluster-placement .nbc-scope-box { cursor: pointer; }
.nbcluster-placement path.nbc-edge { fill: none; stroke: var(--jp-ui-font-color2, #555);
  stroke-width: 1; }
.nbcluster-placement path.nbc-edge-control { stroke-dasharray: 3 3; }
.nbcluster-placement path.nbc-edge-transfer { fill: none; stroke: var(--jp-error-color1, #C0392B);
  stroke-width: 2.4; stroke-dasharray: 7 3; }
.nbcluster-placement path.nbc-bundle { stroke-dasharray: none; stroke-opacity: 0.8; }
.nbcluster-placement .nbc-edge-label { font: 11px monospace; fill: var(--jp-ui-font-color1, #333);
  paint-order: stroke; stroke: var(--jp-layout-color0, #fff); stroke-width: 3px; }
.nbcluster-placement .nbc-transfer-label { fill: var(--jp-ui-font-color0, #111); font-weight: bold; }
.nbcluster-placement .nbc-minimap { position: absolute; right: 6px; bottom: 6px; display: none;
  border: 1px solid var(--jp-border-color1, #999); cursor: crosshair;
  box-shadow: 0 1px 4px rgba(0, 0, 0, 0.3); }
.nbcluster-placement .nbc-minimap-back { fill: var(--jp-layout-color1, #fff); }
.nbcluster-placement .nbc-minimap text { display: none; }
.nbcluster-placement .nbc-minimap-view { fill: var(--jp-brand-color1, #1976d2); fill-opacity: 0.15;
  stroke: var(--jp-brand-color1, #1976d2); stroke-width: 1.5; }
.nbcluster-placement .nbc-tooltip { position: absolute; display: none; pointer-events: none;
  background: var(--jp-layout-color1, #fff); color: var(--jp-ui-font-color0, #111);
  border: 1px solid var(--jp-border-color1, #888); border-radius: 3px;
  padding: 4px 6px; font: 11px monospace; white-space: pre; z-index: 10;
  box-shadow: 0 1px 4px rgba(0, 0, 0, 0.25); }
`;
