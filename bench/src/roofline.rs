//! The roofline chart (`--svg`): achieved FLOP/s against arithmetic intensity, both
//! logarithmic, under each device's ceilings measured in the same run: the copy
//! bandwidth (memory roof) and the best reference matmul (compute roof). Drawn with
//! plotters' SVG backend; text is written as SVG `<text>` with an estimated layout, so
//! no system font is read.

use crate::cases::layer_norm::LAYER_NORM_FLOP_PER_ELEMENT;
use crate::cases::softmax::SOFTMAX_FLOP_PER_ELEMENT;
use crate::measured::{Measured, Role};
use crate::report::{fmt_time, roofs};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

fn si(v: f64) -> String {
    if v < 1.0 {
        // 0.1, 0.01, 0.003 ...: as many decimals as the first significant digit needs.
        let decimals = (-v.log10()).ceil().max(1.0) as usize;
        return format!("{v:.decimals$}");
    }
    let (d, unit) = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(d, _)| v >= *d)
        .unwrap_or((1.0, ""));
    let x = v / d;
    if x >= 10.0 || x == x.round() {
        format!("{x:.0}{unit}")
    } else {
        format!("{x:.1}{unit}")
    }
}

/// A short label for a point: the case (less the matmul's block shape), its size and
/// its time.
fn label(r: &Measured) -> String {
    let mut case = r.case.replace(" (ieee)", "").replace(" fwd f32", "");
    if let Some(rest) = case.strip_prefix("matmul ") {
        let types = rest.split(' ').next().unwrap_or(rest);
        case = format!("mm {types}");
    }
    format!("{case} {} ({})", r.size, fmt_time(r.seconds))
}

/// Draws the chart of `results` into `path`.
pub fn svg(results: &[Measured], path: &Path) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("cannot draw {}: {e}", path.display());
    let points: Vec<&Measured> = results
        .iter()
        .filter(|r| r.roofline && r.flops > 0.0 && r.bytes > 0.0 && r.seconds > 0.0)
        .collect();
    let roofs = roofs(results);
    // Ranges: every point and every ridge (where the two roofs meet), with margins.
    let (mut xs, mut ys): (Vec<f64>, Vec<f64>) = points
        .iter()
        .map(|r| (r.intensity(), r.flop_rate()))
        .unzip();
    for roof in &roofs {
        if let Some((c, _)) = &roof.compute {
            ys.push(*c);
            if let Some(bw) = roof.bandwidth {
                xs.push(c / bw);
            }
        }
    }
    let range = |v: &[f64], lo: f64, hi: f64| {
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(0f64, f64::max);
        if min.is_finite() && max > 0.0 {
            (min / 4.0, max * 4.0)
        } else {
            (lo, hi)
        }
    };
    let (x0, x1) = range(&xs, 1e-2, 1e3);
    let (y0, y1) = range(&ys, 1e6, 1e15);

    let root = SVGBackend::new(path, (1200, 800)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "tilewise roofline (ceilings measured in the same run)",
            ("sans-serif", 22),
        )
        .margin(20)
        .margin_bottom(40)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("arithmetic intensity (FLOP/byte)")
        .y_desc("achieved (FLOP/s)")
        .x_label_formatter(&|v| si(*v))
        .y_label_formatter(&|v| si(*v))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| err(&e))?;

    let color = |device: &str| {
        let i = roofs.iter().position(|r| r.device == device).unwrap_or(0);
        Palette99::pick(i).to_rgba()
    };
    for roof in &roofs {
        let c = color(&roof.device);
        let ridge = match (roof.bandwidth, &roof.compute) {
            (Some(bw), Some((peak, _))) => peak / bw,
            _ => x1,
        };
        if let Some(bw) = roof.bandwidth {
            // From where the roof enters the chart to the ridge (or the right edge).
            let (start, end) = (x0.max(y0 / bw), ridge.min(x1));
            let line = (0..=64).map(|i| {
                let x = start * (end / start).powf(i as f64 / 64.0);
                (x, bw * x)
            });
            chart
                .draw_series(LineSeries::new(line, c.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(format!("{}: memory roof, copy {}B/s", roof.device, si(bw)))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
        }
        if let Some((peak, source)) = &roof.compute {
            let start = if roof.bandwidth.is_some() { ridge } else { x0 };
            chart
                .draw_series(LineSeries::new(
                    [(start.max(x0), *peak), (x1, *peak)],
                    c.stroke_width(2),
                ))
                .map_err(|e| err(&e))?
                .label(format!(
                    "{}: compute roof, {source} {}FLOP/s",
                    roof.device,
                    si(*peak)
                ))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
        }
    }
    // Tilewise cases as dots, references (cuBLAS) as crosses, each labelled: to the
    // right of the point, or to its left in the right third of the chart.
    let text = |r: &Measured| {
        let font = TextStyle::from(("sans-serif", 12).into_font());
        let right_third = (r.intensity() / x0).ln() > 0.65 * (x1 / x0).ln();
        if right_third {
            let font = font.pos(Pos::new(HPos::Right, VPos::Bottom));
            Text::new(label(r), (-8, -2), font)
        } else {
            let font = font.pos(Pos::new(HPos::Left, VPos::Bottom));
            Text::new(label(r), (8, -2), font)
        }
    };
    let at = |r: &Measured| (r.intensity(), r.flop_rate());
    chart
        .draw_series(points.iter().filter(|r| r.role == Role::Tilewise).map(|r| {
            EmptyElement::at(at(r)) + Circle::new((0, 0), 5, color(&r.device).filled()) + text(r)
        }))
        .map_err(|e| err(&e))?;
    chart
        .draw_series(
            points
                .iter()
                .filter(|r| r.role == Role::Reference)
                .map(|r| {
                    EmptyElement::at(at(r))
                        + Cross::new((0, 0), 5, color(&r.device).stroke_width(2))
                        + text(r)
                }),
        )
        .map_err(|e| err(&e))?;
    chart
        .configure_series_labels()
        // Above the memory roof, top left, no case can be.
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(|e| err(&e))?;
    root.draw(&Text::new(
        format!(
            "Dots: tilewise; crosses: references. FLOPs of the bandwidth-bound cases are \
             nominal: vector add 1 per element (12 bytes), softmax {} per element (8 \
             bytes), layer norm {} per element (16 bytes: X read 3 times, Y written).",
            SOFTMAX_FLOP_PER_ELEMENT, LAYER_NORM_FLOP_PER_ELEMENT
        ),
        (20, 778),
        ("sans-serif", 12),
    ))
    .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measured::COPY_CASE;
    use crate::timing::EVENTS;

    fn row(case: &str, size: &str, seconds: f64, flops: f64, bytes: f64, role: Role) -> Measured {
        Measured {
            case: case.into(),
            device: "cuda: test GPU (sm_90)".into(),
            size: size.into(),
            seconds,
            flops,
            bytes,
            max_rel_err: 0.0,
            timer: EVENTS,
            role,
            reference: None,
            roofline: role == Role::Tilewise || flops > 0.0,
            notes: vec![],
        }
    }

    /// Figures shaped like an H200 run: the chart draws both roofs and every point, and
    /// the table pairs each case with its reference.
    #[test]
    fn chart_of_a_cuda_like_run() {
        let n = (1u64 << 28) as f64;
        let mm = 2.0 * 4096f64.powi(3);
        let mm_bytes = 2.0 * 2.0 * 4096f64.powi(2) + 4.0 * 4096f64.powi(2);
        let mut add = row(
            "vector add f32",
            "268435456",
            1.3e-3,
            n,
            12.0 * n,
            Role::Tilewise,
        );
        add.reference = Some(COPY_CASE.into());
        let mut tw = row(
            "matmul f16->f32 64x64x32",
            "4096x4096x4096",
            8.8e-3,
            mm,
            mm_bytes,
            Role::Tilewise,
        );
        tw.reference = Some("cuBLAS f16->f32".into());
        let results = vec![
            row(
                COPY_CASE,
                "268435456",
                0.5e-3,
                0.0,
                8.0 * n,
                Role::Reference,
            ),
            add,
            tw,
            row(
                "cuBLAS f16->f32",
                "4096x4096x4096",
                0.2e-3,
                mm,
                mm_bytes,
                Role::Reference,
            ),
            row(
                "cuBLAS f16->f32",
                "16x8192x8192",
                0.1e-3,
                1.0,
                1.0,
                Role::Reference,
            ),
        ];
        let r = &results[2];
        let reference = crate::report::reference_of(&results, r).expect("a reference");
        assert_eq!(reference.size, r.size);
        assert!((crate::report::ratio(r, reference) - 0.2 / 8.8).abs() < 1e-9);
        let roofs = roofs(&results);
        assert_eq!(roofs.len(), 1);
        assert!((roofs[0].bandwidth.unwrap() - 8.0 * n / 0.5e-3).abs() < 1.0);
        assert!((roofs[0].compute.as_ref().unwrap().0 - mm / 0.2e-3).abs() < 1.0);
        let path =
            std::env::temp_dir().join(format!("tilewise-roofline-{}.svg", std::process::id()));
        svg(&results, &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(text.contains("memory roof, copy 4.3TB/s"), "{text}");
        assert!(
            text.contains("compute roof, cuBLAS f16-&gt;f32 4096x4096x4096 687TFLOP/s"),
            "{text}"
        );
        assert!(text.contains("vector add f32 268435456"));
        assert!(text.contains("mm f16-&gt;f32 4096x4096x4096"));
    }
}
