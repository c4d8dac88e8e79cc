use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use super::*;

fn info(mode: ApprovalMode, activity: Activity) -> StatusInfo {
    StatusInfo {
        model: "claude-sonnet-4-5".into(),
        mode,
        tokens_in: 48_213,
        tokens_out: 3_907,
        cost: Some(0.1834),
        context_used: Some(0.42),
        branch: Some("feature/parser".into()),
        dirty: 3,
        activity,
        sandbox: None,
        mcp: None,
    }
}

/// The four modes, each with a different activity, one bar per row.
fn bars() -> Vec<StatusInfo> {
    vec![
        info(ApprovalMode::Ask, Activity::Idle),
        info(ApprovalMode::AutoEdit, Activity::Streaming),
        info(ApprovalMode::Auto, Activity::RunningTools(2)),
        info(ApprovalMode::ReadOnly, Activity::WaitingForApproval(1)),
    ]
}

fn draw(infos: &[StatusInfo], width: u16, theme: &Theme) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, infos.len() as u16)).unwrap();
    terminal
        .draw(|frame| {
            for (y, info) in infos.iter().enumerate() {
                let area = Rect::new(0, y as u16, width, 1);
                render_status(info, theme, area, frame.buffer_mut());
            }
        })
        .unwrap();
    terminal
}

#[test]
fn snapshot_each_mode_at_80_columns() {
    let terminal = draw(&bars(), 80, &Theme::new(true));
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn snapshot_each_mode_at_40_columns() {
    let terminal = draw(&bars(), 40, &Theme::new(true));
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn modes_differ_in_word_and_colour() {
    let terminal = draw(&bars(), 80, &Theme::new(true));
    let buffer = terminal.backend().buffer();
    let badge_colours: Vec<Color> = (0..4).map(|y| buffer[(1, y)].fg).collect();
    assert_eq!(
        badge_colours,
        [Color::Cyan, Color::Yellow, Color::Red, Color::Green]
    );
    for y in 0..4 {
        assert!(buffer[(1, y)].modifier.contains(Modifier::REVERSED));
    }
}

#[test]
fn without_colour_the_modes_still_read_differently() {
    let terminal = draw(&bars(), 40, &Theme::new(false));
    let buffer = terminal.backend().buffer();
    let words: Vec<String> = (0..4)
        .map(|y| {
            (0..12)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(words, ["ASK", "AUTO-EDIT", "AUTO", "READ-ONLY"]);
    assert!(buffer[(1, 2)].modifier.contains(Modifier::REVERSED));
    assert_eq!(buffer[(1, 2)].fg, Color::Reset);
}

#[test]
fn a_waiting_approval_survives_the_narrowest_bar() {
    let waiting = info(ApprovalMode::Ask, Activity::WaitingForApproval(2));
    let terminal = draw(&[waiting], 24, &Theme::new(true));
    let row: String = (0..24)
        .map(|x| terminal.backend().buffer()[(x, 0)].symbol())
        .collect();
    assert_eq!(row.trim_end(), " ASK   ◆ 2 waiting");
}

#[test]
fn nothing_is_drawn_outside_the_area_at_any_width() {
    let everything = StatusInfo {
        model: "a-very-long-model-name-from-a-local-server-v2".into(),
        tokens_in: 123_456_789,
        tokens_out: 98_765_432,
        cost: Some(1234.5),
        context_used: Some(0.97),
        branch: Some("a-rather-long-branch-name".into()),
        dirty: 120,
        ..info(ApprovalMode::ReadOnly, Activity::Interrupting)
    };
    for width in 0..=120u16 {
        let mut buffer = Buffer::empty(Rect::new(0, 0, 130, 3));
        render_status(
            &everything,
            &Theme::new(true),
            Rect::new(2, 1, width, 1),
            &mut buffer,
        );
        for y in 0..3 {
            for x in 0..130 {
                let inside = y == 1 && (2..2 + width).contains(&x);
                if !inside {
                    assert_eq!(buffer[(x, y)].symbol(), " ", "width {width}: ({x}, {y})");
                }
            }
        }
    }
}

fn protections(network: bool, writes: bool) -> Protections {
    if !network && !writes {
        return Protections {
            confinement: crate::shell::sandbox::Confinement::none("turned off"),
            refused: None,
            environment_passed: 1,
            environment_withheld: 0,
        };
    }
    Protections::example(network, writes)
}

/// Full, partial and no confinement, at a width that fits everything, then at one
/// where the badge has to shorten.
#[test]
fn snapshot_sandbox_states() {
    let bars: Vec<StatusInfo> = [(true, true), (true, false), (false, false)]
        .into_iter()
        .map(|(network, writes)| StatusInfo {
            sandbox: Some(protections(network, writes)),
            branch: None,
            dirty: 0,
            cost: None,
            ..info(ApprovalMode::Ask, Activity::Idle)
        })
        .collect();
    let theme = Theme::new(true);
    let wide = draw(&bars, 80, &theme);
    let narrow = draw(&bars, 48, &theme);
    insta::assert_snapshot!(format!("{}\n{}", wide.backend(), narrow.backend()));
}

#[test]
fn anything_less_than_full_confinement_is_a_warning() {
    let theme = Theme::new(true);
    assert_eq!(sandbox(&protections(true, true), &theme).style, theme.dim);
    assert_eq!(
        sandbox(&protections(true, false), &theme).style,
        theme.warning
    );
    assert_eq!(
        sandbox(&protections(false, false), &theme).style,
        theme.warning
    );
}

#[test]
fn context_use_warns_as_it_fills() {
    let theme = Theme::new(true);
    assert_eq!(context(0.5, &theme).style, theme.dim);
    assert_eq!(context(0.85, &theme).style, theme.warning);
    assert_eq!(context(0.99, &theme).style, theme.error);
    assert_eq!(context(0.994, &theme).text, "ctx 99%");
}

#[test]
fn numbers_are_compact() {
    let shown: Vec<String> = [0, 999, 1_000, 48_213, 123_456, 1_234_567, 123_456_789]
        .into_iter()
        .map(compact)
        .collect();
    assert_eq!(shown, ["0", "999", "1.0k", "48.2k", "123k", "1.2M", "123M"]);
    assert_eq!(dollars(0.1834), "$0.18");
    assert_eq!(dollars(0.004), "<$0.01");
    assert_eq!(dollars(0.0), "$0.00");
}

#[test]
fn mcp_servers_show_ready_of_total_and_trouble_stands_out() {
    let row = |summary: McpSummary| {
        let with_mcp = StatusInfo {
            mcp: Some(summary),
            ..info(ApprovalMode::Ask, Activity::Idle)
        };
        let terminal = draw(&[with_mcp], 120, &Theme::new(true));
        let buffer = terminal.backend().buffer().clone();
        let text: String = (0..120).map(|x| buffer[(x, 0)].symbol()).collect();
        let at = text.find("mcp ").expect("an mcp part");
        let at = u16::try_from(text[..at].chars().count()).unwrap();
        (text, buffer[(at, 0)].fg)
    };
    let (calm, calm_colour) = row(McpSummary {
        ready: 2,
        total: 2,
        trouble: false,
    });
    assert!(calm.contains("mcp 2/2"), "{calm}");
    let (troubled, troubled_colour) = row(McpSummary {
        ready: 1,
        total: 2,
        trouble: true,
    });
    assert!(troubled.contains("mcp 1/2"), "{troubled}");
    assert_ne!(calm_colour, troubled_colour);
    assert_eq!(troubled_colour, Color::Yellow);
}
