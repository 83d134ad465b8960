// Interaction for the flame graphs of jvmkit's flame package (svg.go): zoom, search, details.
// flameConfig (written before this script) has pad, width, total, charWidth and hit (the search colour).
(function () {
	"use strict";
	var cfg = flameConfig;
	var doc = document;
	var byId = function (id) { return doc.getElementById(id); };
	var details = byId("details"), matched = byId("matched");
	var unzoomBtn = byId("unzoom"), searchBtn = byId("search"), unsearchBtn = byId("unsearch");

	// Frames with their layout in counts (data-s: start, data-n: count, data-d: depth).
	var frames = [];
	var gs = byId("frames").getElementsByTagName("g");
	for (var i = 0; i < gs.length; i++) {
		var g = gs[i];
		var tip = g.getElementsByTagName("title")[0].textContent;
		frames.push({
			g: g,
			rect: g.getElementsByTagName("rect")[0],
			text: g.getElementsByTagName("text")[0],
			s: +g.getAttribute("data-s"),
			n: +g.getAttribute("data-n"),
			d: +g.getAttribute("data-d"),
			label: tip.split("\n")[0],
			tip: tip.replace(/\n/g, " \u2014 "),
			fill: null
		});
		g.setAttribute("data-i", i);
	}

	function fit(label, w) {
		var n = Math.floor((w - 6) / cfg.charWidth);
		if (n < 3) return "";
		var chars = Array.from(label);
		return chars.length <= n ? label : chars.slice(0, n - 2).join("") + "..";
	}

	function place(f, x01, w01) {
		var x = cfg.pad + x01 * cfg.width, w = w01 * cfg.width;
		f.rect.setAttribute("x", x.toFixed(2));
		f.rect.setAttribute("width", w.toFixed(2));
		f.text.setAttribute("x", (x + 3).toFixed(2));
		f.text.textContent = fit(f.label, w);
	}

	// Zoom: the frame fills the width, its callees scale with it, its callers span the width (faded),
	// the rest hides.
	var zoomed = null;
	function zoom(z) {
		zoomed = z.d === 0 ? null : z;
		for (var i = 0; i < frames.length; i++) {
			var f = frames[i];
			var inside = f.d >= z.d && f.s >= z.s && f.s + f.n <= z.s + z.n;
			var above = f.d < z.d && f.s <= z.s && f.s + f.n >= z.s + z.n;
			f.g.classList.toggle("hide", !inside && !above);
			f.g.classList.toggle("anc", above);
			if (inside) place(f, (f.s - z.s) / z.n, f.n / z.n);
			else if (above) place(f, 0, 1);
		}
		unzoomBtn.classList.toggle("off", zoomed === null);
		remember();
	}
	function unzoom() { if (frames.length) zoom(frames[0]); }

	// Search: frames whose label matches turn the hit colour; "Matched" is the share of the total they
	// cover, each count once however many matching frames stack on it.
	var term = null;
	function search(t) {
		term = t || null;
		var re = null;
		if (term !== null) {
			try { re = new RegExp(term); } catch (e) { re = null; }
		}
		var spans = [];
		for (var i = 0; i < frames.length; i++) {
			var f = frames[i];
			var hit = term !== null && f.d > 0 && (re ? re.test(f.label) : f.label.indexOf(term) >= 0);
			if (f.fill === null) f.fill = f.rect.getAttribute("fill");
			f.rect.setAttribute("fill", hit ? cfg.hit : f.fill);
			if (hit) spans.push([f.s, f.s + f.n]);
		}
		spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
		var sum = 0, end = -1;
		for (var j = 0; j < spans.length; j++) {
			var a = spans[j][0], b = spans[j][1];
			if (a >= end) { sum += b - a; end = b; } else if (b > end) { sum += b - end; end = b; }
		}
		matched.textContent = term === null ? " " :
			"Matched " + (cfg.total ? (100 * sum / cfg.total).toFixed(2) : "0") + "% for /" + term + "/";
		unsearchBtn.classList.toggle("off", term === null);
		remember();
	}

	// The view lives in the URL's fragment, "#z=<frame>&s=<term>", so that a link or a reload keeps it.
	var restoring = false;
	function remember() {
		if (restoring || !window.history || !history.replaceState) return;
		var h = [];
		if (zoomed !== null) h.push("z=" + frames.indexOf(zoomed));
		if (term !== null) h.push("s=" + encodeURIComponent(term));
		try { history.replaceState(null, "", h.length ? "#" + h.join("&") : location.pathname + location.search); } catch (e) { /* file: URLs in some browsers */ }
	}
	function restore() {
		restoring = true;
		var parts = (location.hash || "").replace(/^#/, "").split("&");
		for (var i = 0; i < parts.length; i++) {
			var kv = parts[i].split("=");
			if (kv[0] === "z" && frames[+kv[1]]) zoom(frames[+kv[1]]);
			if (kv[0] === "s" && kv.length > 1) {
				try { search(decodeURIComponent(kv.slice(1).join("="))); } catch (e) { /* a malformed fragment */ }
			}
		}
		restoring = false;
	}
	function askSearch() {
		var t = window.prompt("Highlight frames matching (regular expression):", term || "");
		if (t !== null) search(t);
	}

	function frameOf(e) {
		var el = e.target;
		while (el && el.getAttribute) {
			if (el.hasAttribute("data-i")) return frames[+el.getAttribute("data-i")];
			el = el.parentNode;
		}
		return null;
	}
	var layer = byId("frames");
	layer.addEventListener("click", function (e) {
		var f = frameOf(e);
		if (f) zoom(f);
	});
	layer.addEventListener("mouseover", function (e) {
		var f = frameOf(e);
		if (f) details.textContent = f.tip;
	});
	layer.addEventListener("mouseout", function () { details.textContent = " "; });
	unzoomBtn.addEventListener("click", unzoom);
	searchBtn.addEventListener("click", askSearch);
	unsearchBtn.addEventListener("click", function () { search(null); });
	restore();
	window.addEventListener("keydown", function (e) {
		if ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) {
			e.preventDefault();
			askSearch();
		} else if (e.key === "Escape") {
			search(null);
			unzoom();
		}
	});
})();
