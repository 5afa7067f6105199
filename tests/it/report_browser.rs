//! report.html in a real browser: headless Chromium (Debian's `chromium` package, which
//! `.ci/run` installs) opens reports built through the binary from a run whose tool names and
//! descriptions, case ids, provider names and model answers (tool calls and texts) carry
//! `<script>`, `onerror=`, `onload=`, `ontoggle=` and `javascript:` payloads, and the test
//! asserts that
//! - no payload ran: each would set the page title, set a `data-pwned-N` attribute on the root
//!   element and log to the console; the DOM Chromium dumps after load and its console log on
//!   stderr show none of that — with the report's Content-Security-Policy, and again with it
//!   removed, so the escaping alone is what holds;
//! - the payloads are live: the same payloads written raw into a page (the control) do all of
//!   that in the same browser, so the check above can fail;
//! - every chart rendered: each chart's `<svg>` in the dumped DOM has shapes, and a screenshot
//!   of the page is not blank.
//!
//! Missing Chromium fails the test under `CI=true` and skips it (with a message) elsewhere.

use crate::support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{FakeRequest, FakeResponse, FakeServer, text_body, tool_call_body, toolscore};

const CHROMIUM: &str = "/usr/bin/chromium";

/// The script each payload runs: what the test looks for afterwards.
fn script(n: usize) -> String {
    format!(
        "top.document.title='PWNED-{n}';top.document.documentElement.setAttribute('data-pwned-{n}','1');console.log('PWNED-{n}')"
    )
}

/// Payloads for every context a string can land in: element text, an attribute value, SVG
/// text, the page title. Each runs [`script`] when it reaches the page unescaped (the control
/// page proves it), except the bare `javascript:` URL, which would need a link and a click:
/// the report has no link at all (tests/report_html.rs).
fn payload(n: usize) -> String {
    let js = script(n);
    match n {
        1 => format!("<script>{js}</script>"),
        2 => format!("<img src=x onerror=\"{js}\">"),
        3 => format!("<svg onload=\"{js}\"></svg>"),
        4 => format!("\"><script>{js}</script>"),
        5 => format!("<iframe src=\"javascript:{js}\"></iframe>"),
        6 => format!("</text></svg><script>{js}</script>"),
        7 => format!("</title><details open ontoggle=\"{js}\"></details>"),
        _ => format!("javascript:{js}"),
    }
}

/// Payloads 1 to 7 run when unescaped; 8 is the bare `javascript:` URL.
const LIVE: std::ops::RangeInclusive<usize> = 1..=7;

fn chromium() -> Option<PathBuf> {
    let path = PathBuf::from(CHROMIUM);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{CHROMIUM} is missing: CI must install Debian's chromium package (.ci/run runs scripts/install-chromium.sh)"
    );
    eprintln!("skipped: {CHROMIUM} is missing (bash scripts/install-chromium.sh installs it)");
    None
}

/// What Chromium printed: the DOM after load on stdout, its log (console messages) on stderr.
struct Loaded {
    dom: String,
    log: String,
}

/// Runs headless Chromium with a fresh profile and no network features; `mode` is
/// `--dump-dom` or `--screenshot=PATH`. Killed after a minute.
fn chromium_run(chromium: &Path, page: &Path, mode: &str) -> Loaded {
    chromium_url(
        chromium,
        &format!("file://{}", page.display()),
        mode,
        "1200,2400",
    )
}

/// [`chromium_run`] on a URL (a page with a `#fragment`), in a window of `size` pixels.
fn chromium_url(chromium: &Path, url: &str, mode: &str, size: &str) -> Loaded {
    let page = Path::new(url);
    let profile = tempfile::tempdir().expect("profile dir");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--window-size={size}"))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(mode)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    // Read both pipes on threads so a full pipe never blocks the browser.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish {} within 60 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let loaded = Loaded {
        dom: out.join().expect("stdout thread"),
        log: err.join().expect("stderr thread"),
    };
    assert!(
        status.success(),
        "chromium failed on {}: {status}\n{}",
        page.display(),
        loaded.log
    );
    loaded
}

/// The markers payload `n` leaves when it runs.
fn ran(loaded: &Loaded, n: usize) -> bool {
    let root = loaded
        .dom
        .find("<html")
        .map(|i| &loaded.dom[i..])
        .and_then(|s| s.split('>').next())
        .unwrap_or_default();
    root.contains(&format!("data-pwned-{n}"))
        || loaded.log.contains(&format!("\"PWNED-{n}\""))
        || title(&loaded.dom).contains(&format!("PWNED-{n}"))
}

/// The text of the dumped page's `<title>`.
fn title(dom: &str) -> String {
    let start = dom.find("<title>").map_or(0, |i| i + "<title>".len());
    let end = dom[start..].find("</title>").map_or(start, |i| start + i);
    dom[start..end].to_owned()
}

/// A project whose fixtures and provider names carry payloads, and a fake provider whose
/// answers do.
fn hostile_project(base_url: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    let every_payload: String = (1..=8).map(payload).collect::<Vec<_>>().join(" ");
    let lookup = format!("lookup{}", payload(2));
    let tools = json!({"tools": [
        {"name": lookup, "description": format!("Looks a thing up. {every_payload}"),
         "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "description": every_payload}}}},
        {"name": "get_status", "description": format!("Status. {}", payload(1)),
         "inputSchema": {"type": "object", "properties": {}}}
    ]});
    std::fs::write(data.join("tools.json"), tools.to_string()).expect("tools");
    let case = |id: String, user: &str, tool: Option<&str>| {
        json!({"id": id, "messages": [{"role": "user", "content": user}], "expect": {"tool": tool}})
            .to_string()
    };
    let cases = [
        case(format!("case {}", payload(1)), "look it up", Some(&lookup)),
        case(payload(4), "status please", Some("get_status")),
        case(format!("say {}", payload(6)), "just talk", None),
        case(
            format!("mixed {}", payload(7)),
            "status or lookup",
            Some("get_status"),
        ),
        case("plain".to_owned(), "status or lookup", Some(&lookup)),
    ]
    .join("\n");
    std::fs::write(data.join("cases.jsonl"), cases + "\n").expect("cases");
    // YAML single-quoted strings: everything literal but a doubled quote.
    let quote = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let config = format!(
        "providers:\n  {}:\n    kind: openai-compat\n    base_url: {base_url}\n    model: a\n  {}:\n    kind: openai-compat\n    base_url: {base_url}\n    model: b\ndatasets: [data]\n",
        quote(&format!("first {}", payload(8))),
        quote(&format!("second {}", payload(3))),
    );
    std::fs::write(dir.path().join("toolscore.yaml"), config).expect("config");
    dir
}

/// Model `a` and `b` answer differently, with tool names and texts that are payloads.
fn hostile_model(req: &FakeRequest) -> FakeResponse {
    let user = support::last_user_message(req).unwrap_or_default();
    let model_b = req.body["model"] == "b";
    let lookup = format!("lookup{}", payload(2));
    let body = match user.as_str() {
        "look it up" => tool_call_body(&[(lookup.as_str(), r#"{"q":"x"}"#)]),
        "status please" if model_b => tool_call_body(&[(payload(3).as_str(), "{}")]),
        "status please" => tool_call_body(&[("get_status", "{}")]),
        "just talk" => text_body(&format!("{} {}", payload(5), payload(7))),
        _ if req.seq.is_multiple_of(3) => tool_call_body(&[(payload(6).as_str(), "{}")]),
        _ if req.seq % 3 == 1 => tool_call_body(&[(lookup.as_str(), r#"{"q":"y"}"#)]),
        _ => tool_call_body(&[("get_status", "{}")]),
    };
    FakeResponse::ok(body)
}

/// Builds the reports through the binary: two runs of two arms (so a comparison and a
/// history), each writing report.html, then `toolscore report` of the second with a
/// case-level gate (so verdict tables list the hostile case ids).
fn build_reports(project: &Path) -> Vec<PathBuf> {
    let (a, b) = (
        format!("first {}", payload(8)),
        format!("second {}", payload(3)),
    );
    for id in ["first", "second"] {
        let run = toolscore(
            project,
            &[
                "run",
                "--provider",
                &a,
                "--provider",
                &b,
                "--trials",
                "6",
                "--out",
                "out",
                "--run-id",
                id,
                "--progress",
                "off",
                "--format",
                "html",
            ],
        );
        assert!(run.code == 0, "{}", run.transcript());
    }
    let report = toolscore(
        project,
        &[
            "report",
            "out/second",
            "--format",
            "html",
            "--gate",
            "selection>=0.6",
            "--gate-level",
            "case",
        ],
    );
    assert!(
        report.stderr.contains("wrote out/second/report.html"),
        "{}",
        report.transcript()
    );
    let first = project.join("out/first/report.html");
    let second = project.join("out/second/report.html");
    vec![first, second]
}

/// The chart ids of a report, read from the file.
fn chart_ids(html: &str) -> Vec<String> {
    let re = regex::Regex::new(r#"<figure class="chart" id="([a-z0-9-]+)">"#).expect("regex");
    re.captures_iter(html).map(|c| c[1].to_owned()).collect()
}

/// Asserts each chart's `<svg>` in the dumped DOM holds shapes.
fn assert_charts_rendered(dom: &str, ids: &[String]) {
    for id in ids {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("chart {id} missing from the rendered DOM"));
        let rest = &dom[at..];
        let svg_start = rest
            .find("<svg")
            .unwrap_or_else(|| panic!("chart {id} has no svg"));
        let svg_end = rest[svg_start..]
            .find("</svg>")
            .unwrap_or_else(|| panic!("chart {id}'s svg is not closed"));
        let svg = &rest[svg_start..svg_start + svg_end];
        let shapes = ["<line", "<rect", "<circle", "<polygon", "<polyline"]
            .iter()
            .map(|s| svg.matches(s).count())
            .sum::<usize>();
        assert!(shapes >= 3, "chart {id} rendered {shapes} shapes:\n{svg}");
    }
}

#[test]
fn hostile_strings_never_run_and_every_chart_renders_in_chromium() {
    let Some(chromium) = chromium() else { return };
    let server = FakeServer::start_in_background(hostile_model);
    let project = hostile_project(&server.base_url);
    let reports = build_reports(project.path());

    // The control: the payloads written raw into a page run in this browser.
    let control = project.path().join("control.html");
    let raw: String = LIVE.map(|n| format!("<p>{}</p>\n", payload(n))).collect();
    std::fs::write(
        &control,
        format!(
            "<!DOCTYPE html><html><head><title>clean</title></head><body>\n{raw}</body></html>\n"
        ),
    )
    .expect("control page");
    let loaded = chromium_run(&chromium, &control, "--dump-dom");
    for n in LIVE {
        assert!(
            ran(&loaded, n),
            "payload {n} did not run unescaped, so its absence proves nothing: {}\n{}",
            payload(n),
            loaded.dom
        );
    }

    let csp = csp_meta();
    for report in &reports {
        let html = std::fs::read_to_string(report).expect("report.html");
        // Every payload is in the page, as text.
        for n in [1, 2, 3, 4, 6, 7, 8] {
            assert!(
                html.contains(&format!("PWNED-{n}")),
                "payload {n} is not in {}",
                report.display()
            );
        }
        let ids = chart_ids(&html);
        let expected = [
            "forest-0",
            "tools-0",
            "confusion-0",
            "latency-0",
            "forest-1",
            "tools-1",
            "confusion-1",
            "latency-1",
            "differences",
            "trend-0",
            "trend-1",
        ];
        for id in expected {
            assert!(
                ids.iter().any(|i| i == id),
                "{id} not in {}",
                report.display()
            );
        }
        // The case explorer carries the models' answers (the payloads among them) too.
        assert!(
            html.contains("<section class=\"explorer\""),
            "no case explorer in {}",
            report.display()
        );
        // As written (with its CSP) and with the CSP removed: the escaping alone must hold.
        assert!(csp.is_match(&html), "no CSP in {}", report.display());
        let bare = report.with_file_name("report-without-csp.html");
        std::fs::write(&bare, csp.replace(&html, "").as_ref()).expect("write");
        for page in [report.as_path(), bare.as_path()] {
            let loaded = chromium_run(&chromium, page, "--dump-dom");
            for n in 1..=8 {
                assert!(
                    !ran(&loaded, n),
                    "payload {n} ran in {}: {}",
                    page.display(),
                    payload(n)
                );
            }
            let run_id = report
                .parent()
                .and_then(Path::file_name)
                .expect("run folder")
                .to_string_lossy();
            assert_eq!(
                title(&loaded.dom),
                format!("toolscore report · run {run_id}"),
                "{}",
                page.display()
            );
            assert_charts_rendered(&loaded.dom, &ids);
        }
    }

    // A screenshot of the page as a reader sees it is not blank.
    let shot = project.path().join("report.png");
    chromium_run(
        &chromium,
        &reports[1],
        &format!("--screenshot={}", shot.display()),
    );
    let (width, height, pixels) = decode_png(&std::fs::read(&shot).expect("screenshot"));
    assert_eq!((width, height), (1200, 2400));
    let inked = pixels.iter().filter(|p| p.iter().any(|&c| c < 200)).count();
    let colours: std::collections::BTreeSet<[u8; 3]> = pixels.iter().copied().collect();
    assert!(
        inked * 50 > pixels.len(),
        "the screenshot is nearly blank: {inked} of {} pixels inked",
        pixels.len()
    );
    assert!(colours.len() > 20, "only {} colours", colours.len());
}

/// A forest-plot row's link opens its case's explorer with no script: in a window tall
/// enough for the whole page (headless Chromium paints nothing when a fragment scrolls it),
/// the page sent to the row's `#case-…` shows a section `:target` made visible, so it differs
/// from the page as opened; sent to an id no element has, it is the page as opened (the
/// control: a section left hidden would look the same). The shipped recording, 61 cases ×
/// 40 trials.
#[test]
fn a_forest_row_opens_its_case_explorer_in_chromium() {
    let Some(chromium) = chromium() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().expect("tempdir");
    let run = toolscore(
        root,
        &[
            "run",
            "--provider",
            "demo",
            "--run-id",
            "demo",
            "--progress",
            "off",
            "--format",
            "html",
            "--out",
            out.path().to_str().expect("utf-8"),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let page = out.path().join("demo/report.html");
    let html = std::fs::read_to_string(&page).expect("report.html");
    let link =
        regex::Regex::new(r##"<a class="explore" href="#(case-[0-9a-f]{16})">"##).expect("regex");
    let target = link.captures(&html).expect("a forest row with a link")[1].to_owned();
    // The section it opens holds the case's conversation and its behaviours.
    let at = html
        .find(&format!("<section class=\"explorer\" id=\"{target}\">"))
        .expect("its section");
    let section = &html[at..at + html[at..].find("</section>").expect("closed")];
    assert!(section.contains("<ol class=\"conversation\">"), "{section}");
    assert!(section.contains("<pre class=\"example\">"), "{section}");

    let url = format!("file://{}", page.display());
    let shot = |fragment: &str, name: &str| {
        let png = out.path().join(name);
        chromium_url(
            &chromium,
            &format!("{url}{fragment}"),
            &format!("--screenshot={}", png.display()),
            "1200,9000",
        );
        decode_png(&std::fs::read(&png).expect("screenshot")).2
    };
    let top = shot("", "top.png");
    let nowhere = shot("#no-such-element", "nowhere.png");
    let opened = shot(&format!("#{target}"), "opened.png");
    assert!(
        top == nowhere,
        "a fragment that names nothing moved the view"
    );
    assert!(
        opened != top,
        "following #{target} showed nothing new: its section stayed hidden"
    );
    let inked = opened.iter().filter(|p| p.iter().any(|&c| c < 200)).count();
    assert!(
        inked * 100 > opened.len(),
        "the opened explorer is nearly blank"
    );
}

/// Decodes an 8-bit RGB or RGBA PNG (what Chromium writes) into RGB pixels: enough to tell
/// a rendered page from a blank one without an image crate.
fn decode_png(bytes: &[u8]) -> (usize, usize, Vec<[u8; 3]>) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let (mut width, mut height, mut channels) = (0, 0, 0);
    let mut idat = Vec::new();
    let mut at = 8;
    while at + 8 <= bytes.len() {
        let len = be(&bytes[at..]);
        let kind = &bytes[at + 4..at + 8];
        let data = &bytes[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                width = be(data);
                height = be(&data[4..]);
                assert_eq!(data[8], 8, "bit depth");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    other => panic!("colour type {other}"),
                };
                assert_eq!(data[12], 0, "interlaced PNG");
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(idat.as_slice())
        .read_to_end(&mut raw)
        .expect("inflate");
    let stride = width * channels;
    assert_eq!(raw.len(), height * (stride + 1), "image data size");
    let mut image = vec![0u8; height * stride];
    for y in 0..height {
        let filter = raw[y * (stride + 1)];
        let line = &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)];
        for x in 0..stride {
            let a = if x >= channels {
                image[y * stride + x - channels]
            } else {
                0
            };
            let b = if y > 0 {
                image[(y - 1) * stride + x]
            } else {
                0
            };
            let c = if x >= channels && y > 0 {
                image[(y - 1) * stride + x - channels]
            } else {
                0
            };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                other => panic!("PNG filter {other}"),
            };
            image[y * stride + x] = line[x].wrapping_add(predicted);
        }
    }
    let pixels = image
        .chunks_exact(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (width, height, pixels)
}

/// The report's Content-Security-Policy, which forbids scripts: removed where the test runs one.
fn csp_meta() -> regex::Regex {
    regex::Regex::new(r#"<meta http-equiv="Content-Security-Policy"[^>]*/>"#).expect("regex")
}

/// Measures, in the browser, every text of every chart against its chart's box, and writes
/// the texts that stick out into `data-clipped` on the root element (the dumped DOM shows it).
const MEASURE_CLIPPING: &str = r#"<script>
const out = [];
for (const svg of document.querySelectorAll('svg')) {
  const box = svg.getBoundingClientRect();
  for (const t of svg.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (r.width === 0) continue;
    if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) {
      out.push(((svg.closest('figure') || {}).id || svg.getAttribute('class')) + ': ' + t.textContent.slice(0, 48));
    }
  }
}
document.documentElement.setAttribute('data-clipped', JSON.stringify(out));
</script>"#;

/// The shipped recordings run twice as two arms compared, so the page has every chart: the
/// comparison's forest, per-tool bars, the confusion heatmap, latency and a two-run trend.
#[test]
fn no_chart_label_is_cut_off_and_the_comparison_comes_before_the_arms() {
    let Some(chromium) = chromium() else { return };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().expect("out");
    let out_dir = out.path().to_str().expect("utf-8");
    for run_id in ["week-48", "week-49"] {
        let run = toolscore(
            root,
            &[
                "run",
                "--provider",
                "demo",
                "--provider",
                "demo-terse",
                "--trials",
                "3",
                "--compare",
                "--progress",
                "off",
                "--run-id",
                run_id,
                "--out",
                out_dir,
                "--format",
                "html",
            ],
        );
        assert!(matches!(run.code, 0 | 3), "{}", run.transcript());
    }
    let report = out.path().join("week-49/report.html");
    let html = std::fs::read_to_string(&report).expect("report.html");
    // The decision first: the comparison sits right under the verdict, above the arms.
    let comparison = html
        .find("<section id=\"comparison\">")
        .expect("comparison");
    let first_arm = html.find("<section class=\"arm\"").expect("an arm");
    assert!(comparison < first_arm, "the comparison is below the arms");
    // Per-tool bars: pooled Wilson, each whisker capped at both ends.
    let tools = html
        .split("id=\"tools-0\"")
        .nth(1)
        .and_then(|s| s.split("</figure>").next())
        .expect("per-tool bars");
    assert_eq!(
        tools.matches("class=\"cap\"").count(),
        2 * tools.matches("class=\"whisker\"").count()
    );
    // Both runs on the trend, labelled with their day and run id.
    assert!(html.contains(">week-48</text>") && html.contains(">week-49</text>"));

    let measured = report.with_file_name("report-measured.html");
    let page = csp_meta()
        .replace(&html, "")
        .replace("</body>", &format!("{MEASURE_CLIPPING}\n</body>"));
    std::fs::write(&measured, page).expect("write");
    let loaded = chromium_run(&chromium, &measured, "--dump-dom");
    let clipped = regex::Regex::new(r#"data-clipped="([^"]*)""#)
        .expect("regex")
        .captures(&loaded.dom)
        .map(|c| c[1].replace("&quot;", "\""))
        .unwrap_or_else(|| panic!("the measuring script did not run:\n{}", loaded.log));
    let clipped: Vec<String> = serde_json::from_str(&clipped).expect("a JSON list");
    assert!(
        clipped.is_empty(),
        "labels cut off by their chart: {clipped:#?}"
    );
}

/// Measures the page as laid out: every text of every chart inside its chart's box, no two
/// texts of one chart overlapping, and nothing wider than the window (a wide table scrolls
/// inside its own box). Writes what it found into `data-layout` on the root element.
const MEASURE_LAYOUT: &str = r#"<script>
const out = [];
let texts_seen = 0, texts_measured = 0;
const name = (svg) => (svg.closest('section') || {}).id + ' ' + (svg.getAttribute('aria-label') || '').slice(0, 40);
for (const svg of document.querySelectorAll('svg')) {
  const box = svg.getBoundingClientRect();
  const all = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim() !== '');
  const texts = all.map(t => [t, t.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
  texts_seen += all.length;
  texts_measured += texts.length;
  for (const [t, r] of texts) {
    if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1) {
      out.push('clipped: ' + name(svg) + ': ' + t.textContent.slice(0, 40));
    }
  }
  // A rotated label's box is the axis-aligned hull of its slanted line, so neighbours' boxes
  // overlap where their glyphs do not: only upright texts are compared.
  const upright = texts.filter(([t]) => !(t.getAttribute('transform') || '').includes('rotate'));
  for (let i = 0; i < upright.length; i++) {
    for (let j = i + 1; j < upright.length; j++) {
      const [a, ra] = upright[i], [b, rb] = upright[j];
      const dx = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
      const dy = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
      if (dx > 0.5 && dy > 0.5) {
        out.push('overlap: ' + name(svg) + ': ' + a.textContent.slice(0, 30) + ' / ' + b.textContent.slice(0, 30));
      }
    }
  }
}
// A chart text drawn under 8 px high (a wide chart shrunk to a phone's width) cannot be read.
for (const t of document.querySelectorAll('svg text')) {
  const r = t.getBoundingClientRect();
  if (r.width > 0 && t.textContent.trim() !== '' && r.height < 8) {
    out.push('unreadable: ' + name(t.closest('svg')) + ': ' + t.textContent.slice(0, 30) + ' drawn ' + r.height.toFixed(1) + ' px high');
    break;
  }
}
// A short word of a table cell laid out over two lines was broken mid-token to save width.
for (const td of document.querySelectorAll('td')) {
  const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of node.textContent.matchAll(/[A-Za-z0-9_]{2,20}/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
      if (tops.size > 1) {
        out.push('broken word: ' + m[0] + ' in a cell of ' + ((td.closest('table') || {}).id || 'a table'));
      }
    }
  }
}
if (document.documentElement.scrollWidth > window.innerWidth + 1) {
  out.push('the page is ' + document.documentElement.scrollWidth + ' px wide in a window of ' + window.innerWidth);
}
// A text laid out nowhere (a section the browser skipped) would pass unmeasured: say so.
if (texts_measured !== texts_seen) {
  out.push('measured ' + texts_measured + ' of ' + texts_seen + ' chart texts');
}
document.documentElement.setAttribute('data-layout', JSON.stringify(out));
</script>"#;

/// What [`MEASURE_LAYOUT`] found on `page` (its CSP removed so the script runs) in a window
/// `width` pixels wide.
fn layout_problems(chromium: &Path, page: &Path, width: u32) -> Vec<String> {
    let html = std::fs::read_to_string(page).expect("page");
    let measured = page.with_file_name(format!("measured-{width}.html"));
    let text = csp_meta()
        .replace(&html, "")
        .replace("</body>", &format!("{MEASURE_LAYOUT}\n</body>"));
    std::fs::write(&measured, text).expect("write");
    let loaded = chromium_url(
        chromium,
        &format!("file://{}", measured.display()),
        "--dump-dom",
        &format!("{width},2400"),
    );
    let found = regex::Regex::new(r#"data-layout="([^"]*)""#)
        .expect("regex")
        .captures(&loaded.dom)
        .map(|c| c[1].replace("&quot;", "\""))
        .unwrap_or_else(|| panic!("the measuring script did not run:\n{}", loaded.log));
    serde_json::from_str(&found).expect("a JSON list")
}

/// The history page of the hostile project's runs: no payload runs (with the page's CSP and
/// without it), its chart renders, and at 1280 and 390 pixels wide no label is cut off or
/// drawn over another and nothing sticks out of the window.
#[test]
fn the_history_page_runs_no_hostile_string_and_fits_a_desktop_and_a_phone() {
    let Some(chromium) = chromium() else { return };
    let server = FakeServer::start_in_background(hostile_model);
    let project = hostile_project(&server.base_url);
    build_reports(project.path());
    let h = toolscore(
        project.path(),
        &["history", "--dir", "out", "--format", "html"],
    );
    assert_eq!(h.code, 0, "{}", h.transcript());
    let page = project.path().join("out/history.html");
    let html = std::fs::read_to_string(&page).expect("history.html");
    for n in [2, 3, 8] {
        assert!(
            html.contains(&format!("PWNED-{n}")),
            "payload {n} is not in the page"
        );
    }
    let csp = csp_meta();
    assert!(csp.is_match(&html), "no CSP in history.html");
    let bare = page.with_file_name("history-without-csp.html");
    std::fs::write(&bare, csp.replace(&html, "").as_ref()).expect("write");
    for p in [page.as_path(), bare.as_path()] {
        let loaded = chromium_run(&chromium, p, "--dump-dom");
        for n in 1..=8 {
            assert!(!ran(&loaded, n), "payload {n} ran in {}", p.display());
        }
        assert_eq!(title(&loaded.dom), "toolscore history · selection");
        let trends = loaded.dom.matches("<svg class=\"trend\"").count();
        assert_eq!(trends, 2, "one trend per arm");
        assert!(
            loaded.dom.matches("<circle").count() >= 4,
            "the points were drawn"
        );
    }
    for width in [1280, 390] {
        let problems = layout_problems(&chromium, &page, width);
        assert!(problems.is_empty(), "at {width} px: {problems:#?}");
    }
    // A run's own page, whose charts are wider than a phone, too: the shipped recording's.
    let demo = support::project_copy();
    let run = toolscore(
        demo.path(),
        &[
            "run",
            "--provider",
            "demo",
            "--trials",
            "3",
            "--run-id",
            "phone",
            "--format",
            "html",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let report = demo.path().join("reports/phone/report.html");
    let problems = layout_problems(&chromium, &report, 390);
    assert!(problems.is_empty(), "report.html at 390 px: {problems:#?}");

    // A year of weekly runs: thinned run labels, drop and rise marks, sequential, resumed and
    // merged runs, a catalog change and runs kept apart, at both widths.
    let year = tempfile::tempdir().expect("tempdir");
    support::history::write_synthetic_history(year.path(), 12, 52);
    let h = toolscore(year.path(), &["history", "--dir", ".", "--format", "html"]);
    assert!(h.code <= 1, "{}", h.transcript());
    let page = year.path().join("history.html");
    let html = std::fs::read_to_string(&page).expect("history.html");
    for mark in [
        "class=\"flag worse\"",
        "class=\"gathered\"",
        "<rect class=\"run",
        "class=\"catalog\"",
    ] {
        assert!(html.contains(mark), "the year's page has no {mark}");
    }
    for width in [1280, 390] {
        let problems = layout_problems(&chromium, &page, width);
        assert!(problems.is_empty(), "a year at {width} px: {problems:#?}");
    }
}

/// A fake model on `cli_history`'s small dataset whose rates the test sets by week: case `ck`
/// right with probability 0.55 + 0.04·(k mod 9), 0.25 less from the week `dropped_from`. Which
/// trials are right is drawn from (week, case, the case's request number) alone, so a run's
/// counts do not depend on the order its requests arrive in, and the weeks differ by trial
/// noise as a real model's do.
fn weekly_model(
    week: std::sync::Arc<std::sync::atomic::AtomicU32>,
    dropped_from: u32,
) -> impl Fn(&FakeRequest) -> FakeResponse + Send + Sync + 'static {
    use std::sync::atomic::Ordering;
    let seen: std::sync::Mutex<std::collections::HashMap<(u32, u32), u64>> =
        std::sync::Mutex::new(std::collections::HashMap::new());
    move |req| {
        let case: u32 = support::last_user_message(req)
            .unwrap_or_default()
            .trim_start_matches("case c")
            .parse()
            .unwrap_or(0);
        let w = week.load(Ordering::SeqCst);
        let k = {
            let mut seen = seen.lock().expect("lock");
            let n = seen.entry((w, case)).or_default();
            *n += 1;
            *n - 1
        };
        let mut z =
            (u64::from(w) << 40 | u64::from(case) << 20 | k).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let uniform = (z ^ (z >> 31)) as f64 / u64::MAX as f64;
        let rate = 0.55 + 0.04 * f64::from(case % 9) - if w >= dropped_from { 0.25 } else { 0.0 };
        if uniform < rate {
            FakeResponse::ok(tool_call_body(&[("lookup", "{}")]))
        } else {
            FakeResponse::ok(text_body("I am not sure."))
        }
    }
}

/// The weekly guide's page: twelve weekly replays of the shipped recording and twelve weeks of
/// a fake model whose rates fall by 0.25 in week 12. The drop is marked on week 12 of the fake
/// series and nowhere else, which is where `history --fail-on-drop` exits 1, and every link
/// resolves. `TOOLSCORE_UPDATE_DOCS=1` writes the guide's screenshot, docs/history.png.
#[test]
fn the_weekly_guides_page_marks_the_newest_drop_and_every_link_resolves() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("tmp");
    let weekly = tmp.path().join("weekly");
    let out_dir = weekly.to_str().expect("utf-8");
    for week in 1..=12 {
        let run_id = format!("demo-week-{week:02}");
        let r = toolscore(
            root,
            &[
                "run",
                "--run-id",
                &run_id,
                "--out",
                out_dir,
                "--format",
                "html",
                "--progress",
                "off",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let week = std::sync::Arc::new(AtomicU32::new(1));
    let server = FakeServer::start_in_background(weekly_model(week.clone(), 12));
    let project = support::fake_project(
        &server.base_url,
        crate::cli_history::TOOLS,
        &crate::cli_history::cases(),
        &[],
    );
    for w in 1..=12 {
        week.store(w, Ordering::SeqCst);
        let run_id = format!("fake-week-{w:02}");
        let r = toolscore(
            project.path(),
            &[
                "run",
                "--provider",
                "fake",
                "--trials",
                "20",
                "--run-id",
                &run_id,
                "--out",
                out_dir,
                "--format",
                "html",
                "--progress",
                "off",
            ],
        );
        assert_eq!(r.code, 0, "{}", r.transcript());
    }
    let h = toolscore(
        tmp.path(),
        &[
            "history",
            "--dir",
            "weekly",
            "--format",
            "html",
            "--format",
            "md",
            "--fail-on-drop",
        ],
    );
    assert_eq!(h.code, 1, "{}", h.transcript());
    let page = weekly.join("history.html");
    let html = std::fs::read_to_string(&page).expect("history.html");
    let doc = crate::cli_history::parse_page(&html);
    let flagged: Vec<String> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("run worse"))
        .filter_map(|n| n.children().find(|c| c.tag_name().name() == "title"))
        .filter_map(|t| {
            t.text()
                .map(|s| s.split(' ').next().unwrap_or_default().to_owned())
        })
        .collect();
    assert_eq!(flagged, ["fake-week-12"], "the drop, and only it");
    let (links, _) = crate::cli_history::links_resolve(&weekly, &html);
    assert!(links >= 24, "{links} links");
    let md = std::fs::read_to_string(weekly.join("history.md")).expect("history.md");
    assert!(
        md.contains("**DROP: 1 of 2 series dropped significantly"),
        "{md}"
    );

    if std::env::var("TOOLSCORE_UPDATE_DOCS").as_deref() == Ok("1") {
        let Some(chromium) = chromium() else {
            panic!("TOOLSCORE_UPDATE_DOCS=1 needs {CHROMIUM} for the screenshot")
        };
        let shot = root.join("docs/history.png");
        chromium_url(
            &chromium,
            &format!("file://{}", page.display()),
            &format!("--screenshot={}", shot.display()),
            "1280,1500",
        );
        eprintln!("wrote {}\n{md}", shot.display());
    }
}
