# bash completion for sandbox-executable(1).
# Install: copy to /usr/local/share/bash-completion/completions/sandbox-executable
# (bash-completion loads it on first use), or source it from ~/.bashrc.
# cmd/gen-manpage's tests check that it offers every option of --help.

_sandbox_executable() {
	# Options that take a value, as one word or as --opt=VALUE.
	local with_value="--rw --ro --hide --net --timeout --memory --pids --cpu --sandbox-policy --sandbox-policy-cwd --seccomp-profile --resource-limits --keep-fd --fs-mode --cgroup-parent --cpu-quota --report-file --report-fd --log-denials --log-level --log-format --log-file"
	local flags="--persist-cache --allow-git-commit --scratch-caches --no-project-files --quiet -q --explain-endings --keep-env --allow-degraded --explain --help -h --version"
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local i w program_at='' explain=''

	# bash splits "--fs-mode=ex" at "=" (COMP_WORDBREAKS): complete the value.
	if [[ $cur == = ]]; then
		prev=${COMP_WORDS[COMP_CWORD - 1]} cur=
	elif [[ $prev == = ]]; then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	fi

	# Where does the program start? After "--", or at the first word that
	# is not an option (skipping the options' values), as the helper reads it.
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if ((i == 1)) && [[ $w == doctor ]]; then
			mapfile -t COMPREPLY < <(compgen -W "--json --help" -- "$cur")
			return
		fi
		if ((i == 1)) && [[ $w == decider ]]; then
			mapfile -t COMPREPLY < <(compgen -f -- "$cur") # the socket
			return
		fi
		if ((i == 1)) && [[ $w == explain ]]; then
			explain=1 && continue # a run's options, then paths
		fi
		case $w in
		--) program_at=$((i + 1)) && break ;;
		=) ((i++)) ;;
		-*) [[ " $with_value " == *" $w "* && ${COMP_WORDS[i + 1]} != = ]] && ((i++)) ;;
		*) program_at=$i && break ;;
		esac
	done

	if [[ -n $program_at && -n $explain ]]; then
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return
	fi
	if [[ -n $program_at ]]; then
		# Hand over to the program's own completion where bash-completion
		# is loaded; otherwise complete its name or files.
		if ((program_at <= COMP_CWORD)) && declare -F _command_offset >/dev/null; then
			_command_offset "$program_at"
		elif ((program_at == COMP_CWORD)); then
			mapfile -t COMPREPLY < <(compgen -c -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		fi
		return
	fi

	case $prev in
	--fs-mode)
		mapfile -t COMPREPLY < <(compgen -W "auto exact landlock" -- "$cur")
		return
		;;
	--log-level)
		mapfile -t COMPREPLY < <(compgen -W "debug info warn error" -- "$cur")
		return
		;;
	--log-format)
		mapfile -t COMPREPLY < <(compgen -W "text json" -- "$cur")
		return
		;;
	--sandbox-policy-cwd | --rw)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		return
		;;
	--ro | --hide)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return
		;;
	--net)
		mapfile -t COMPREPLY < <(compgen -W "loopback none full allow:" -- "$cur")
		return
		;;
	--report-file | --log-denials | --log-file)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return
		;;
	--sandbox-policy | --seccomp-profile | --resource-limits | --keep-fd | --report-fd | --cgroup-parent | --cpu-quota | --timeout | --memory | --pids | --cpu)
		return # JSON, a number or a cgroup path: nothing sensible to offer
		;;
	esac

	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$with_value $flags --" -- "$cur")
	elif ((COMP_CWORD == 1)); then
		mapfile -t COMPREPLY < <(compgen -W "doctor explain decider" -c -- "$cur")
	else
		mapfile -t COMPREPLY < <(compgen -c -- "$cur")
	fi
}
complete -F _sandbox_executable sandbox-executable
