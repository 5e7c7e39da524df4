//! The inbox: an answer to a task's question killed right after it was
//! journaled, before the task ran on. Answering again is refused (exit 2,
//! as answered), `resume` runs the task on with the answer given once,
//! and the session log shows the answer.

use super::{Tally, gapless, lines};
use baton_testkit::{TestProject, on_both_backends};

const SHIP: &str = "name = \"ship\"\n[[phase]]\nid = \"ask\"\nwait = { human = \"Ship it?\", options = [\"yes\", \"no\"] }\n[[phase]]\nid = \"ship\"\nrun = \"echo shipped >> shipped.txt\"\n";

on_both_backends! {
    fn an_answer_crashed_before_its_task_ran_on_is_given_once() {
        let mut t = Tally::default();
        let point = "inbox-answered:rel/ask";
        let p = TestProject::new();
        p.workflow("ship", SHIP);
        let (code, _, err) = p.run(&["run", "ship", "x", "--id", "rel"]);
        assert_eq!(code, 4, "{err}");
        t.crash(p.baton(&["inbox", "answer", "rel/ask", "yes", "--by", "ana"]), point);
        let (code, _, err) = p.run(&["inbox", "answer", "rel/ask", "no", "--by", "bo"]);
        t.recovered(point, "inbox answer (again)", code, 2, &err);
        let (code, _, err) = p.run(&["resume", "rel"]);
        t.recovered(point, "resume", code, 0, &err);
        let doc = p.state("rel");
        t.check(doc["status"] == "COMPLETE", || format!("{point}: {}", doc["status"]));
        let answers: Vec<_> = p.journal("rel").into_iter().filter(|e| e["kind"] == "answered").collect();
        t.check(answers.len() == 1 && answers[0]["by"] == "ana", || format!("{point}: answers journaled: {answers:?}"));
        t.check(lines(&p, "shipped.txt") == 1, || format!("{point}: shipped {} times", lines(&p, "shipped.txt")));
        t.check(gapless(&p, "rel"), || format!("{point}: the journal has a gap"));
        let log = fs_err::read_to_string(p.root().join(".baton/sessions/rel.md")).unwrap_or_default();
        t.check(log.contains("> [!user] ana answered\n> yes\n"), || format!("{point}: the log lacks the answer: {log}"));
        let (code, out, _) = p.run(&["inbox", "--json"]);
        t.check(code == 0 && out.trim() == "[]", || format!("{point}: the inbox still lists: {out}"));
        t.report("inbox");
    }
}
