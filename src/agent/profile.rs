//! The session's agent profile: what switching to one changes (the
//! prompt, the tools offered, the rules, the model and sampling), and the
//! record of each switch.

use super::state::AgentState;
use crate::agents::Profile;
use crate::config::Config;
use crate::policy::AgentRules;
use crate::protocol::{AgentSummary, EventMsg, SubmissionId};
use crate::sampling::Sampling;
use crate::session::EntryBody;

impl AgentState {
    /// The model in use as configured (`provider/model` or a bare id):
    /// the agent's, else the session's.
    pub(super) fn model(&self) -> &str {
        self.agent.model.as_deref().unwrap_or(&self.session.model)
    }

    /// The model id sent to the server ([`Config::routed`]).
    pub(super) fn model_id(&self) -> &str {
        if self.config.route.model.is_empty() {
            self.model()
        } else {
            &self.config.route.model
        }
    }

    /// The config and client for work done with `reference` beside the
    /// turn (a title, a summary): its provider's, with `profile`'s
    /// sampling.
    pub(super) fn hidden_route(
        &self,
        reference: &str,
        profile: Option<&Profile>,
    ) -> Result<(Config, std::sync::Arc<crate::client::Client>), String> {
        let (mut config, client) = self.route(reference)?;
        if let Some(profile) = profile {
            sampled(profile, &mut config);
        }
        Ok((config, client))
    }

    /// The config `reference` leads to and its endpoint's client (made
    /// on first use); why not, when it leads nowhere.
    fn route(
        &self,
        reference: &str,
    ) -> Result<(Config, std::sync::Arc<crate::client::Client>), String> {
        let config = self
            .base_config
            .routed(reference, &crate::config::process_var)?;
        let client = self
            .clients
            .get(&config)
            .map_err(|e| crate::client::error_chain(&e))?;
        Ok((config, client))
    }

    /// Tools offcode has that this agent is not offered.
    pub(super) fn withheld_tools(&self) -> Vec<String> {
        self.tools
            .specs()
            .into_iter()
            .map(|spec| spec.function.name)
            .filter(|name| !self.agent.offers(name))
            .collect()
    }

    /// The tools `profile` is offered: offcode's, `task` (the session's
    /// own agent only) and the MCP servers' running now.
    pub(super) fn offered_tools(&self, profile: &Profile) -> Vec<crate::client::wire::ToolSpec> {
        let mut tools: Vec<_> = self.tools.specs();
        // Only the session's own agent starts subagents.
        if self.depth == 0 {
            tools.extend(super::task::spec(&self.agents));
        }
        if let Some(mcp) = &self.mcp {
            tools.extend(mcp.specs(profile.reads_only()));
        }
        let compact = self.compact();
        tools.retain(|spec| {
            let name = spec.function.name.as_str();
            profile.offers(name)
                && !(compact
                    && crate::agents::LEFT_OUT_WHEN_COMPACT.contains(&name)
                    && profile.tools.get(name) != Some(&true))
        });
        tools
    }

    /// Whether the agent can change files: it is offered a tool that
    /// writes them (`plan` is not).
    pub(super) fn can_change(&self) -> bool {
        self.request
            .tools()
            .iter()
            .any(|spec| self.effect(&spec.function.name) == crate::tools::Effect::ChangesFiles)
    }

    /// Whether the compact prompt and tool set are used: the config's
    /// `compact`, or on `auto` a small model or a short context.
    pub(super) fn compact(&self) -> bool {
        crate::agents::compact_choice(
            self.config.compact.forced(),
            self.model(),
            self.known_limit(),
        )
        .0
    }

    /// The agent adopted again, after what decides its tools changed (the
    /// model).
    pub(super) fn refit_agent(&mut self) {
        let _ = self.adopt_agent(self.agent.clone());
    }

    /// Makes `profile` the agent: its prompt, tools, rules and sampling.
    pub(super) fn adopt_agent(&mut self, profile: Profile) -> Result<(), String> {
        let rules = AgentRules::new(
            &profile.name,
            &profile.origin.to_string(),
            profile.permission.as_ref(),
            profile.project_permission.as_ref(),
        )
        .map_err(|e| e.to_string())?;
        let reference = profile.model.as_deref().unwrap_or(&self.session.model);
        let (routed, client) = self.route(reference)?;
        let config = with_profile(&routed, &profile);
        self.permits.set_agent(rules);
        if config.base_url != self.config.base_url {
            // Another server: its own list and lengths.
            self.budget.listed = None;
        }
        self.config = config;
        self.client = client;
        self.agent = profile;
        let tools = self.offered_tools(&self.agent);
        let compact = self.compact();
        self.request.set_agent(&self.agent.prompt, tools, compact);
        Ok(())
    }

    /// At the start: the agent `wanted` (`--agent`, or the session's),
    /// else `build`. Told and recorded by [`AgentState::record_start_agent`].
    pub(super) fn start_agent(&mut self, wanted: &str) {
        // A subagent's core starts as its subagent.
        let profile = if self.depth > 0 {
            self.agents.get(wanted).cloned()
        } else {
            self.agents.primary(wanted).ok().cloned()
        };
        if let Some(profile) = profile
            && self.adopt_agent(profile).is_ok()
        {
            return;
        }
        if let Some(build) = self.agents.get(crate::agents::DEFAULT).cloned() {
            let _ = self.adopt_agent(build);
        }
    }

    /// Before the first turn: a session that ran with an agent no longer
    /// defined is told so, and a start with another agent than the
    /// session's last is recorded.
    pub(super) fn record_start_agent(&mut self) {
        if self.depth > 0 {
            // A subagent's whole context, for `/inspect`.
            let entry = EntryBody::Context {
                system: self.request.system().into_owned(),
                workspace: self.request.context().workspace(),
                tools: self
                    .request
                    .tools()
                    .iter()
                    .map(|t| t.function.name.clone())
                    .collect(),
            };
            let _ = self.record(0, entry);
        }
        if self.session.agent == self.agent.name {
            return;
        }
        if self.depth == 0 && self.agents.primary(&self.session.agent).is_err() {
            let message = format!(
                "The session's agent `{}` is not defined here; it goes on with `{}`",
                self.session.agent, self.agent.name
            );
            self.warn(0, &message);
        }
        let agent = self.agent.name.clone();
        let _ = self.record(0, EntryBody::AgentChange { agent });
    }

    /// [`Op::SetAgent`](crate::protocol::Op::SetAgent): switches, records
    /// the switch and says so; a name that is not a primary agent is
    /// refused with the names that are.
    pub(super) fn set_agent(&mut self, id: SubmissionId, name: Option<String>) {
        let name = name.unwrap_or_else(|| self.agents.next_primary(&self.agent.name).to_owned());
        let profile = match self.agents.primary(&name) {
            Ok(profile) => profile.clone(),
            Err(why) => {
                self.warn(id, &format!("The agent was not switched: {why}"));
                return;
            }
        };
        if let Err(why) = self.adopt_agent(profile) {
            self.warn(id, &format!("The agent was not switched: {why}"));
            return;
        }
        let agent = self.agent.name.clone();
        if self
            .record(
                id,
                EntryBody::AgentChange {
                    agent: agent.clone(),
                },
            )
            .is_ok()
        {
            self.adopt_server_facts(id);
            let model = self.model().to_owned();
            self.emit(id, EventMsg::AgentChanged { agent, model });
        }
    }

    /// [`Op::SetModel`](crate::protocol::Op::SetModel): the model and its
    /// provider's client, recorded in the session and told.
    pub(super) fn set_model(&mut self, id: SubmissionId, model: String) {
        // Where it leads first: a model that leads nowhere, or a server
        // that cannot be reached as configured, leaves the model as it was.
        if let Err(why) = self.route(&model) {
            self.warn(id, &format!("The model was not switched: {why}"));
            return;
        }
        // A model chosen by hand wins over the agent's.
        self.agent.model = None;
        if self
            .record(
                id,
                EntryBody::ModelChange {
                    model: model.clone(),
                },
            )
            .is_ok()
        {
            self.adopt_server_facts(id);
            self.refit_agent();
            let limit = self.known_limit();
            self.emit(id, EventMsg::ModelChanged { model, limit });
            // Another server: its list (and the model's length,
            // for the status line) is asked for beside.
            if self.budget.listed.is_none() {
                self.list_models(id);
            }
        }
    }

    /// [`Op::ListAgents`](crate::protocol::Op::ListAgents).
    pub(super) fn list_agents(&self, id: SubmissionId) {
        let agents = self
            .agents
            .all()
            .iter()
            .filter(|p| p.mode != crate::agents::Mode::Hidden)
            .map(|p| AgentSummary {
                name: p.name.clone(),
                mode: match p.mode {
                    crate::agents::Mode::Primary => "primary",
                    crate::agents::Mode::Subagent => "subagent",
                    crate::agents::Mode::All | crate::agents::Mode::Hidden => "all",
                }
                .to_owned(),
                description: p.description.clone(),
                origin: p.origin.to_string(),
                active: p.name == self.agent.name,
            })
            .collect();
        self.emit(id, EventMsg::AgentList { agents });
    }
}

/// `config` with the profile's sampling and step limit.
fn with_profile(config: &Config, profile: &Profile) -> Config {
    let mut config = config.clone();
    sampled(profile, &mut config);
    config.max_steps = profile.max_steps.unwrap_or(config.max_steps);
    // The agent's body keys win over the model's.
    let fields = crate::config::provider::REQUEST_FIELDS;
    config.route.body.extend(
        profile
            .body
            .iter()
            .filter(|(k, _)| !fields.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    config
}

/// `config`'s sampling for `profile`: its own setting, else the config's,
/// else the agent's default (`"server"` in either sends none).
pub(super) fn sampled(profile: &Profile, config: &mut Config) {
    let (temperature, top_p) = profile.default_sampling;
    config.temperature = profile
        .temperature
        .or(config.temperature)
        .or(temperature.map(Sampling::Value));
    config.top_p = profile
        .top_p
        .or(config.top_p)
        .or(top_p.map(Sampling::Value));
}
