"use strict";(self.rspackChunkletitloop=self.rspackChunkletitloop||[]).push([[232],{475(r,e,l){var o=l(601),a=l.n(o),i=l(314),t=(l.n(i))()(a());t.push([r.id,`.lil-sidebar { display: flex; flex-direction: column; overflow: auto; padding: 4px; font-size: var(--jp-ui-font-size1); background: var(--jp-layout-color1); }
.lil-tabs { display: flex; gap: 2px; margin-bottom: 4px; }
.lil-tab { flex: 1; border: 1px solid var(--jp-border-color2); background: var(--jp-layout-color2); color: var(--jp-ui-font-color1); padding: 3px; cursor: pointer; }
.lil-tab.lil-active { background: var(--jp-brand-color1); color: white; }
.lil-filters { display: flex; gap: 4px; margin-bottom: 4px; }
.lil-search { flex: 1; min-width: 0; }
.lil-run, .lil-splice, .lil-approval-card { border: 1px solid var(--jp-border-color2); border-radius: 3px; padding: 4px 6px; margin: 3px 0; cursor: pointer; }
.lil-run:hover, .lil-splice:hover { background: var(--jp-layout-color2); }
.lil-run-head, .lil-run-meta, .lil-step-title { display: flex; gap: 6px; align-items: center; }
.lil-run-workflow { font-weight: bold; flex: 1; }
.lil-run-id { color: var(--jp-ui-font-color2); font-size: 90%; overflow: hidden; text-overflow: ellipsis; }
.lil-run-meta { color: var(--jp-ui-font-color2); font-size: 90%; }
.lil-badge { border-radius: 8px; padding: 0 6px; font-size: 85%; color: white; background: #777; border: none; }
.lil-badge-running, .lil-badge-started { background: #1976d2; }
.lil-badge-completed { background: #388e3c; }
.lil-badge-replayed { background: #00796b; }
.lil-badge-failed { background: #d32f2f; }
.lil-badge-interrupted { background: #f57c00; }
.lil-badge-suspended, .lil-badge-waiting { background: #8e24aa; }
.lil-badge-cancelled, .lil-badge-reset, .lil-badge-not-run { background: #9e9e9e; }
.lil-approval-payload { width: 100%; box-sizing: border-box; font-family: var(--jp-code-font-family); }
.lil-approval-comment { width: 100%; box-sizing: border-box; margin: 3px 0; }
.lil-approval-name { font-weight: bold; }
.lil-approval-message, .lil-error, .lil-splice-message { color: var(--jp-error-color1); white-space: pre-wrap; }
.lil-empty { color: var(--jp-ui-font-color2); padding: 6px; }
.lil-run-view, .lil-splice-view { padding: 12px; overflow: auto; background: var(--jp-layout-color0); }
.lil-run-view-head { display: flex; gap: 10px; align-items: center; }
.lil-cost-meter { margin: 6px 0; display: flex; flex-wrap: wrap; gap: 12px; align-items: center; }
.lil-board { border-collapse: collapse; margin: 4px 0 8px; font-size: 90%; }
.lil-board td { padding: 2px 10px 2px 0; vertical-align: top; }
.lil-board-version, .lil-board-tags, .lil-board-by { color: var(--jp-ui-font-color2); }
.lil-board-preview { font-family: var(--jp-code-font-family); white-space: pre-wrap; }
.lil-conversation { margin: 4px 0 8px; padding-left: 20px; }
.lil-turn-handoff { font-weight: 600; }
.lil-cost-bar { height: 6px; background: var(--jp-layout-color3); width: 240px; border-radius: 3px; }
.lil-cost-fill { height: 6px; background: #f57c00; border-radius: 3px; }
.lil-actions { display: flex; gap: 6px; margin: 8px 0; }
.lil-timeline { list-style: none; padding-left: 0; border-left: 3px solid var(--jp-border-color2); }
.lil-step { margin: 0 0 8px 10px; }
.lil-step-name { font-weight: bold; }
.lil-step-kind, .lil-attempt { color: var(--jp-ui-font-color2); }
.lil-attempt { margin-left: 12px; display: flex; flex-wrap: wrap; gap: 8px; }
.lil-preview, .lil-result, .lil-attempt-error, .lil-run-error { width: 100%; margin: 2px 0; padding: 4px; background: var(--jp-layout-color2); max-height: 12em; overflow: auto; }
.lil-attempt-error, .lil-run-error { color: var(--jp-error-color1); }
.lil-diff-line.lil-add { background: rgba(56, 142, 60, 0.2); }
.lil-diff-line.lil-del { background: rgba(211, 47, 47, 0.2); }
.lil-side-by-side { display: flex; gap: 8px; }
.lil-side-by-side pre { flex: 1; padding: 6px; background: var(--jp-layout-color2); }
.lil-splice-buttons { display: flex; gap: 6px; margin: 8px 0; }
.lil-durable-cell { border-left: 3px solid #8e24aa; }
.lil-cell-badge { position: absolute; top: 2px; right: 8px; z-index: 10; cursor: pointer; }
.jp-SideBar .lm-TabBar-tab[data-lil-waiting] { position: relative; }
.jp-SideBar .lm-TabBar-tab[data-lil-waiting]:not([data-lil-waiting='0'])::after { content: attr(data-lil-waiting); position: absolute; inset: 1px 1px auto auto; width: auto; height: 14px; min-width: 14px; padding: 0 3px; box-sizing: border-box; background: #d32f2f; color: white; border: none; border-radius: 7px; font-size: 9px; line-height: 14px; text-align: center; }
.lil-queue, .lil-worker, .lil-orphan { border: 1px solid var(--jp-border-color2); border-radius: 3px; padding: 4px 6px; margin: 3px 0; }
.lil-queue-paused { opacity: 0.7; }
.lil-subhead { color: var(--jp-ui-font-color2); font-size: var(--jp-ui-font-size0); margin: 8px 0 2px; text-transform: uppercase; }
.lil-worker-run, .lil-orphan { cursor: pointer; }
.lil-worker-run:hover, .lil-orphan:hover { background: var(--jp-layout-color2); }
.lil-orphan-command { display: block; font-size: var(--jp-code-font-size); white-space: pre-wrap; }
.lil-queue .lil-run-meta span, .lil-worker .lil-run-meta span { white-space: nowrap; }
`,""]),l.d(e,{},{A:t})},314(r){r.exports=function(r){var e=[];return e.toString=function(){return this.map(function(e){var l="",o=void 0!==e[5];return e[4]&&(l+="@supports (".concat(e[4],") {")),e[2]&&(l+="@media ".concat(e[2]," {")),o&&(l+="@layer".concat(e[5].length>0?" ".concat(e[5]):""," {")),l+=r(e),o&&(l+="}"),e[2]&&(l+="}"),e[4]&&(l+="}"),l}).join("")},e.i=function(r,l,o,a,i){"string"==typeof r&&(r=[[null,r,void 0]]);var t={};if(o)for(var n=0;n<this.length;n++){var p=this[n][0];null!=p&&(t[p]=!0)}for(var d=0;d<r.length;d++){var c=[].concat(r[d]);o&&t[c[0]]||(void 0!==i&&(void 0===c[5]||(c[1]="@layer".concat(c[5].length>0?" ".concat(c[5]):""," {").concat(c[1],"}")),c[5]=i),l&&(c[2]&&(c[1]="@media ".concat(c[2]," {").concat(c[1],"}")),c[2]=l),a&&(c[4]?(c[1]="@supports (".concat(c[4],") {").concat(c[1],"}"),c[4]=a):c[4]="".concat(a)),e.push(c))}},e}},601(r){r.exports=function(r){return r[1]}},72(r){var e=[];function l(r){for(var l=-1,o=0;o<e.length;o++)if(e[o].identifier===r){l=o;break}return l}function o(r,o){for(var a={},i=[],t=0;t<r.length;t++){var n=r[t],p=o.base?n[0]+o.base:n[0],d=a[p]||0,c="".concat(p," ").concat(d);a[p]=d+1;var s=l(c),u={css:n[1],media:n[2],sourceMap:n[3],supports:n[4],layer:n[5]};if(-1!==s)e[s].references++,e[s].updater(u);else{var f=function(r,e){var l=e.domAPI(e);return l.update(r),function(e){e?(e.css!==r.css||e.media!==r.media||e.sourceMap!==r.sourceMap||e.supports!==r.supports||e.layer!==r.layer)&&l.update(r=e):l.remove()}}(u,o);o.byIndex=t,e.splice(t,0,{identifier:c,updater:f,references:1})}i.push(c)}return i}r.exports=function(r,a){var i=o(r=r||[],a=a||{});return function(r){r=r||[];for(var t=0;t<i.length;t++){var n=l(i[t]);e[n].references--}for(var p=o(r,a),d=0;d<i.length;d++){var c=l(i[d]);0===e[c].references&&(e[c].updater(),e.splice(c,1))}i=p}}},659(r){var e={};r.exports=function(r,l){var o=function(r){if(void 0===e[r]){var l=document.querySelector(r);if(window.HTMLIFrameElement&&l instanceof window.HTMLIFrameElement)try{l=l.contentDocument.head}catch(r){l=null}e[r]=l}return e[r]}(r);if(!o)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");o.appendChild(l)}},540(r){r.exports=function(r){var e=document.createElement("style");return r.setAttributes(e,r.attributes),r.insert(e,r.options),e}},56(r,e,l){r.exports=function(r){var e=l.nc;e&&r.setAttribute("nonce",e)}},825(r){r.exports=function(r){if("u"<typeof document)return{update:function(){},remove:function(){}};var e=r.insertStyleElement(r);return{update:function(l){var o,a,i;o="",l.supports&&(o+="@supports (".concat(l.supports,") {")),l.media&&(o+="@media ".concat(l.media," {")),(a=void 0!==l.layer)&&(o+="@layer".concat(l.layer.length>0?" ".concat(l.layer):""," {")),o+=l.css,a&&(o+="}"),l.media&&(o+="}"),l.supports&&(o+="}"),(i=l.sourceMap)&&"u">typeof btoa&&(o+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(i))))," */")),r.styleTagTransform(o,e,r.options)},remove:function(){var r;null===(r=e).parentNode||r.parentNode.removeChild(r)}}}},113(r){r.exports=function(r,e){if(e.styleSheet)e.styleSheet.cssText=r;else{for(;e.firstChild;)e.removeChild(e.firstChild);e.appendChild(document.createTextNode(r))}}},579(r,e,l){var o=l(72),a=l.n(o),i=l(825),t=l.n(i),n=l(659),p=l.n(n),d=l(56),c=l.n(d),s=l(540),u=l.n(s),f=l(113),g=l.n(f),b=l(475),x={};x.styleTagTransform=g(),x.setAttributes=c(),x.insert=p().bind(null,"head"),x.domAPI=t(),x.insertStyleElement=u(),a()(b.A,x),b.A&&b.A.locals&&b.A.locals}}]);