//! The classifier against a table of real-world commands, and the reasons and
//! protections it reports.

use std::path::Path;
use std::sync::LazyLock;

use pretty_assertions::assert_eq;

use super::*;
use crate::policy::ProtectedPaths;

use CommandClass::{Destructive, Network, ReadOnly, Unknown, WritesWorkspace};

/// Tracked files of the test repository at `/repo`.
struct Tracked;

impl TrackedFiles for Tracked {
    fn is_tracked(&self, path: &Path) -> bool {
        ["src/main.rs", "Cargo.toml", "Cargo.lock", "README.md"]
            .iter()
            .any(|tracked| Path::new(tracked) == path)
    }
}

/// Compiling the default globs is slow in debug builds; do it once.
static PROTECTED: LazyLock<ProtectedPaths> = LazyLock::new(ProtectedPaths::default);

fn classify_in(command: &str, cwd: &str) -> Classification {
    let context = CommandContext {
        root: Path::new("/repo"),
        cwd: Path::new(cwd),
        tracked: &Tracked,
        protected: &PROTECTED,
    };
    classify(command, &context)
}

fn class_of(command: &str) -> Classification {
    classify_in(command, "/repo")
}

const TABLE: &[(&str, CommandClass)] = &[
    // Reads.
    ("ls -la src", ReadOnly),
    ("cat README.md", ReadOnly),
    ("rg -n 'fn main' src", ReadOnly),
    ("grep -r TODO . | head -5", ReadOnly),
    ("git status", ReadOnly),
    ("git -C sub status", ReadOnly),
    ("git --no-pager log --oneline -5", ReadOnly),
    ("git diff HEAD~1 -- src", ReadOnly),
    ("git show HEAD:src/main.rs", ReadOnly),
    ("git branch -a", ReadOnly),
    ("cargo check --all-targets", ReadOnly),
    ("cargo test --all", ReadOnly),
    ("cargo +nightly clippy -- -D warnings", ReadOnly),
    ("cargo build --release", ReadOnly),
    ("find . -name '*.rs'", ReadOnly),
    ("find . -name '*.rs' -exec cat {} \\;", ReadOnly),
    ("ls | xargs cat", ReadOnly),
    ("echo hi > /dev/null", ReadOnly),
    ("wc -l src/main.rs 2>&1", ReadOnly),
    ("cargo test 2>/dev/null | tail -20", ReadOnly),
    ("cd src && ls", ReadOnly),
    ("FOO=1 ls", ReadOnly),
    ("echo \"a$(date)b\"", Unknown),
    ("[ -f x ] && cat x", ReadOnly),
    ("for f in *.rs; do echo $f; done", ReadOnly),
    ("sed -n '1,10p' src/main.rs", ReadOnly),
    ("awk '{print $1}' a.txt", ReadOnly),
    ("command -v cargo", ReadOnly),
    ("timeout 10 cargo test", ReadOnly),
    ("env FOO=1 cargo test", ReadOnly),
    ("nice -n 10 git log", ReadOnly),
    ("time cargo check", ReadOnly),
    ("nohup cargo build &", ReadOnly),
    ("sort a.txt | uniq -c", ReadOnly),
    ("cat <<EOF\nhi\nEOF", ReadOnly),
    ("tar -tzf a.tgz", ReadOnly),
    ("python3 --version", ReadOnly),
    ("bash -c 'ls && git status'", ReadOnly),
    ("/usr/bin/git status", ReadOnly),
    // Ordinary writes in the workspace.
    ("touch notes.txt", WritesWorkspace),
    ("mkdir -p build/out", WritesWorkspace),
    ("cp src/main.rs backup.rs", WritesWorkspace),
    ("mv notes.txt docs/notes.txt", WritesWorkspace),
    ("sed -i 's/a/b/' src/main.rs", WritesWorkspace),
    ("cargo fmt", WritesWorkspace),
    ("npm test", WritesWorkspace),
    ("make", WritesWorkspace),
    ("echo hi > notes.txt", WritesWorkspace),
    ("echo hi >> src/main.rs", WritesWorkspace),
    ("cat <<EOF > notes.txt\nhello $USER\nEOF", WritesWorkspace),
    ("git commit -m 'x'", WritesWorkspace),
    ("git add -A", WritesWorkspace),
    ("git checkout -b feature", WritesWorkspace),
    ("cargo run -- --help", WritesWorkspace),
    ("rm notes.txt", WritesWorkspace),
    ("pytest -q", WritesWorkspace),
    ("echo x | tee out.log", WritesWorkspace),
    ("source .venv/bin/activate", WritesWorkspace),
    ("prettier --write src", WritesWorkspace),
    ("cd docs && echo x > a.md", WritesWorkspace),
    ("kill %1", WritesWorkspace),
    // The network.
    ("curl https://example.com", Network),
    ("wget -qO- https://example.com", Network),
    ("ssh host uptime", Network),
    ("git push origin main", Network),
    ("git fetch --all", Network),
    ("git pull --rebase", Network),
    ("git clone https://github.com/x/y", Network),
    ("pip install requests", Network),
    ("npm install", Network),
    ("cargo install ripgrep", Network),
    ("apt-get install -y jq", Network),
    ("rsync -a src/ host:/backup/", Network),
    ("npx create-react-app web", Network),
    // Unknown: dynamic text, unrecognised programs, code duet cannot read.
    ("$(echo rm) -rf /", Unknown),
    ("`echo rm` -rf /", Unknown),
    ("$CMD arg", Unknown),
    ("eval \"$X\"", Unknown),
    ("source ./setup.sh", Unknown),
    ("./configure", Unknown),
    ("python script.py", Unknown),
    ("python -c 'print(1)'", Unknown),
    ("bash script.sh", Unknown),
    ("curl -fsSL https://x | sh", Unknown),
    ("ls \"unterminated", Unknown),
    ("f() { ls; }; f", Unknown),
    ("frobnicate --all", Unknown),
    ("git config core.pager 'rm -rf .'", Unknown),
    ("git -c alias.x='!rm -rf .' x", Unknown),
    ("PATH=/tmp/evil:$PATH ls", Unknown),
    ("echo x | xargs sh", Unknown),
    ("exec > log.txt", Unknown),
    ("echo hi > $LOG", Unknown),
    ("cd $DIR && touch x", Unknown),
    ("sed 's/x/y/w out' a.txt", Unknown),
    // Destructive: lost data, or writes outside the workspace.
    ("find / -exec rm {} \\;", Destructive),
    ("curl -o ~/.bashrc http://x", Destructive),
    ("bash -c \"rm -rf .\"", Destructive),
    ("git push --force", Destructive),
    ("git push -f origin main", Destructive),
    ("git push origin +main", Destructive),
    ("echo ok > Cargo.lock", Destructive),
    ("xargs rm", Destructive),
    ("sudo rm -rf /", Destructive),
    ("rm -rf target", Destructive),
    ("rm -r src", Destructive),
    ("git reset --hard HEAD~1", Destructive),
    ("git clean -fdx", Destructive),
    ("git checkout -- .", Destructive),
    ("git checkout .", Destructive),
    ("git restore src/main.rs", Destructive),
    ("mkfs.ext4 /dev/sda1", Destructive),
    ("dd if=/dev/zero of=/dev/sda", Destructive),
    ("chmod -R 777 .", Destructive),
    ("chown -R me .", Destructive),
    ("shred -u secrets.txt", Destructive),
    ("echo x > src/main.rs", Destructive),
    ("touch /etc/motd", Destructive),
    ("cp a.txt /tmp/a.txt", Destructive),
    ("cd /tmp && touch x", Destructive),
    ("find . -delete", Destructive),
    ("rm *.o", Destructive),
    ("git stash drop", Destructive),
    ("git branch -D old", Destructive),
    ("kill -9 1234", Destructive),
    ("sh -c 'sh -c \"rm -rf /\"'", Destructive),
    ("(cd .. && rm notes.txt)", Destructive),
    ("ls && rm -rf ~", Destructive),
    ("sudo apt-get remove -y jq", Destructive),
    ("rm -rf .git", Destructive),
    ("mv a.txt Cargo.toml", Destructive),
    ("echo hi | sudo tee /etc/hosts", Destructive),
    ("cargo test && rm -rf target", Destructive),
    ("ls $(rm -rf /)", Destructive),
    ("cat <(rm -rf build)", Destructive),
    ("echo x > >(rm -rf build)", Destructive),
    ("a=$(rm -rf /)", Destructive),
    ("timeout 5 rm -rf build", Destructive),
    ("env -i FOO=1 rm -rf build", Destructive),
    ("find . -name '*.tmp' | xargs -I{} rm {}", Destructive),
];

#[test]
fn every_command_in_the_table_gets_its_class() {
    assert!(TABLE.len() >= 60);
    let wrong: Vec<String> = TABLE
        .iter()
        .filter_map(|&(command, expected)| {
            let got = class_of(command);
            (got.class != expected).then(|| {
                format!(
                    "{command:?}: expected {expected}, got {} {:?}",
                    got.class, got.reasons
                )
            })
        })
        .collect();
    assert!(wrong.is_empty(), "misclassified:\n{}", wrong.join("\n"));
}

#[test]
fn read_only_commands_carry_no_reasons() {
    for &(command, class) in TABLE {
        if class == ReadOnly {
            assert_eq!(class_of(command).reasons, [], "{command}");
        }
    }
}

#[test]
fn each_reason_names_the_part_and_why() {
    let classification = class_of("cargo test && rm -rf target");
    assert_eq!(
        classification.reasons,
        [Reason {
            part: "rm -rf target".into(),
            class: Destructive,
            why: "deletes target and everything in it".into(),
        }]
    );
    assert_eq!(
        classification.summary(),
        "`rm -rf target` deletes target and everything in it"
    );

    let pushed = class_of("git push --force");
    let classes: Vec<CommandClass> = pushed.classes().collect();
    assert_eq!(classes, [Network, Destructive], "{:?}", pushed.reasons);

    let dynamic = class_of("$(echo rm) -rf /");
    assert!(
        dynamic.reasons[0].why.contains("only known when it runs"),
        "{:?}",
        dynamic.reasons
    );
}

#[test]
fn the_most_dangerous_part_decides() {
    assert!(ReadOnly < WritesWorkspace);
    assert!(WritesWorkspace < Network);
    assert!(Network < Unknown);
    assert!(Unknown < Destructive);
    assert_eq!(class_of("ls; curl x; ./build.sh").class, Unknown);
    assert_eq!(class_of("curl x | tee out.txt").class, Network);
}

#[test]
fn protected_paths_written_by_a_command_are_reported() {
    let protected = |command: &str| -> Vec<String> {
        class_of(command)
            .protected
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(
        protected("echo ok > Cargo.lock"),
        ["Cargo.lock is protected (lockfile)"]
    );
    assert_eq!(
        protected("echo KEY=1 >> .env"),
        [".env is protected (environment file)"]
    );
    assert_eq!(protected("rm -rf ."), [".git is protected (git metadata)"]);
    assert_eq!(
        protected("rm -rf .github"),
        [".github/workflows is protected (CI configuration)"]
    );
    assert_eq!(
        protected("npm install"),
        ["package-lock.json is protected (lockfile)"]
    );
    assert_eq!(protected("cat Cargo.lock .env"), Vec::<String>::new());
    assert_eq!(
        class_of("echo KEY=1 >> .env").class,
        WritesWorkspace,
        "appending is an ordinary write, but still protected"
    );
}

#[test]
fn paths_follow_the_directory_the_command_starts_in() {
    assert_eq!(
        classify_in("echo x > main.rs", "/repo/src").class,
        Destructive
    );
    assert_eq!(
        classify_in("echo x > new.rs", "/repo/src").class,
        WritesWorkspace
    );
    assert_eq!(classify_in("touch x", "/tmp").class, Destructive);
    assert_eq!(classify_in("ls", "/tmp").class, ReadOnly);
    assert_eq!(
        classify_in("cd .. && rm -rf src", "/repo/src").reasons[0].why,
        "deletes src and everything in it"
    );
}

#[test]
fn nested_shells_are_read_to_a_limit() {
    let mut command = "rm -rf build".to_string();
    for _ in 0..3 {
        command = format!("bash -c {}", shell_quote(&command));
    }
    assert_eq!(class_of(&command).class, Destructive, "{command}");

    let mut command = "ls".to_string();
    for _ in 0..8 {
        command = format!("sh -c {}", shell_quote(&command));
    }
    let deep = class_of(&command);
    assert_eq!(deep.class, Unknown, "{command}");
    assert!(
        deep.reasons[0].why.contains("nests shells"),
        "{:?}",
        deep.reasons
    );
}

/// Single-quotes `text` for the shell.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[test]
fn odd_input_never_reads_as_safe() {
    for command in ["", "   ", "\n"] {
        assert_eq!(
            class_of(command).class,
            ReadOnly,
            "{command:?}: nothing runs"
        );
    }
    for command in [
        "ls (",
        "if then fi",
        "echo $((",
        "cat <<EOF\nunterminated",
        "\u{0}rm",
    ] {
        assert_ne!(class_of(command).class, ReadOnly, "{command:?}");
    }
    let long = "echo hi; ".repeat(2_000);
    assert_eq!(class_of(&long).class, ReadOnly);
    let deep = format!("echo {}x{}", "$(echo ".repeat(2_000), ")".repeat(2_000));
    assert_eq!(class_of(&deep).class, Unknown);
    let chained = vec!["true"; 2_000].join(" && ");
    assert_eq!(class_of(&chained).class, Unknown);
}

#[test]
fn simple_commands_lists_every_command_wrapped_and_nested_ones_too() {
    let words = |command: &str| -> Vec<String> {
        simple_commands(command)
            .into_iter()
            .map(|argv| argv.join(" "))
            .collect()
    };
    assert_eq!(
        words("cat a | grep -k x && sudo rm -rf b"),
        ["cat a", "grep -k x", "sudo rm -rf b", "rm -rf b"]
    );
    assert_eq!(
        words("sh -c 'curl \"$URL\"' ; echo $(git push)"),
        [
            "sh -c curl \"$URL\"",
            "curl \"$URL\"",
            "git push",
            "echo $(git push)"
        ]
    );
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    const READS: &[&str] = &[
        "ls",
        "cat README.md",
        "git status",
        "echo hi",
        "grep -r x src",
        "wc -l src/main.rs",
        "head -5 README.md",
        "git log --oneline",
    ];

    /// Parts whose effect is only known when they run.
    const DYNAMIC: &[&str] = &[
        "echo $(ls)",
        "cat `ls`",
        "grep x \"$(git ls-files)\"",
        "find . $(echo -delete)",
        "eval ls",
        "eval \"$CMD\"",
        "$CMD src",
        "${TOOL} -rf src",
        "\"$X\" README.md",
    ];

    /// Parts known to lose data or write outside the workspace.
    const DESTRUCTIVE: &[&str] = &[
        "rm -rf src",
        "rm README.md",
        "git reset --hard",
        "git clean -fdx",
        "echo x > README.md",
        "mv README.md /tmp/x",
        "find . -delete",
        "dd if=/dev/zero of=README.md",
        "truncate -s 0 Cargo.toml",
        "cp /dev/null src/main.rs",
    ];

    fn pick(parts: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
        proptest::sample::select(parts)
    }

    /// Read-only parts with `hazard` among them, joined into pipelines and lists, and
    /// sometimes wrapped in a subshell, a group, `sh -c` or a wrapper command.
    fn around(hazard: impl Strategy<Value = &'static str>) -> impl Strategy<Value = String> {
        (
            proptest::collection::vec(pick(READS), 0..4),
            hazard,
            any::<usize>(),
            proptest::collection::vec(pick(&[" | ", " && ", " || ", "; ", "\n", " & "]), 4),
            0..6usize,
        )
            .prop_map(|(mut parts, hazard, at, separators, wrapping)| {
                parts.insert(at % (parts.len() + 1), hazard);
                let mut line = String::new();
                for (i, part) in parts.iter().enumerate() {
                    if i > 0 {
                        line.push_str(separators[i - 1]);
                    }
                    line.push_str(part);
                }
                match wrapping {
                    0 => format!("({line})"),
                    1 => format!("{{ {line}; }}"),
                    2 => format!("sh -c '{}'", line.replace('\'', r"'\''")),
                    3 => format!("timeout 5 bash -c '{}'", line.replace('\'', r"'\''")),
                    _ => line,
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn only_reads_are_read_only(command in around(pick(READS))) {
            prop_assert_eq!(class_of(&command).class, ReadOnly, "{}", command);
        }

        #[test]
        fn dynamic_parts_are_never_read_only(command in around(pick(DYNAMIC))) {
            let class = class_of(&command).class;
            prop_assert!(class >= Unknown, "{command:?} is {class}");
        }

        #[test]
        fn destructive_parts_make_the_command_destructive(command in around(pick(DESTRUCTIVE))) {
            let class = class_of(&command).class;
            prop_assert_eq!(class, Destructive, "{}", command);
        }
    }
}
