"""The steps of a training: the step tracker that turns the patches' and
adapters' events into step, epoch and sample marks (tracker; its evaluations
and pauses: pauses; a pass held until it trains: held_marks), the state they
share (state), the loop of a framework that tells its own steps
(framework_loop), and the script's facts (facts)."""
