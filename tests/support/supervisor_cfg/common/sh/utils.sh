# Mirrors Supervisor's workflows/common/sh/utils.sh (abridged to the helpers that test scripts
# and cfg files call, rewritten for the tests): log, crash, get_site, get_expid, the
# SUPERVISOR_PATH helpers (sv_path_append, sv_path_prepend, find_cfg, source_cfg,
# source_site), queue_wait (its local branch) and check_output.

log()
{
  echo $( date "+%Y-%m-%d %H:%M:%S" ) ${LOG_NAME:+${LOG_NAME}:} $*
}

crash()
{
  log "ERROR:" $*
  exit 1
}

get_site()
{
  if (( ${#} < 1 ))
  then
    echo "could not find SITE argument!"
    return 1
  fi
  export SITE=$1
}

get_expid()
# EXPID -a: the lowest free EXPnnn under $EMEWS_PROJECT_ROOT/experiments
{
  export EXPID=$1
  local EXPERIMENTS=$EMEWS_PROJECT_ROOT/experiments i=0
  if [[ $EXPID == "-a" ]]
  then
    mkdir -p $EXPERIMENTS
    while [[ -e $EXPERIMENTS/$( printf "EXP%03i" $i ) ]]
    do
      i=$(( i + 1 ))
    done
    EXPID=$( printf "EXP%03i" $i )
  fi
  export TURBINE_OUTPUT=$EXPERIMENTS/$EXPID
}

sv_path_prepend()
{
  SUPERVISOR_PATH=$1${SUPERVISOR_PATH:+:}${SUPERVISOR_PATH:-}
  export SUPERVISOR_PATH
}

sv_path_append()
{
  SUPERVISOR_PATH=${SUPERVISOR_PATH:-}${SUPERVISOR_PATH:+:}$1
  export SUPERVISOR_PATH
}

search_cfg()
# NAME -> REPLY: itself if absolute, else the first readable DIR/NAME of SUPERVISOR_PATH
{
  local NAME=$1 DIR
  if [[ ${NAME:0:1} == "/" ]]
  then
    [[ -r $NAME ]] && REPLY=$NAME && return
    return 1
  fi
  for DIR in ${SUPERVISOR_PATH//:/ }
  do
    if [[ -r $DIR/$NAME ]]
    then
      REPLY=$DIR/$NAME
      return
    fi
  done
  log "search_cfg(): not found in SUPERVISOR_PATH: '$NAME'"
  return 1
}

find_cfg()
{
  while [[ $1 == "-v" ]]; do shift; done
  search_cfg $1
}

source_cfg()
{
  while [[ $1 == "-v" ]]; do shift; done
  search_cfg $1 && source $REPLY
}

source_site()
# source_site [-o] TOKEN SITE: TOKEN-SITE.sh from SUPERVISOR_PATH (-o: if there is one)
{
  local OPTIONAL=0
  if [[ $1 == "-o" ]]; then OPTIONAL=1; shift; fi
  export SITE=$2
  if ! search_cfg $1-$SITE.sh
  then
    (( OPTIONAL )) && return 0
    return 1
  fi
  source $REPLY
}

queue_wait()
{
  source_site sched $SITE
  if [[ ${MACHINE:-} == "" ]]
  then
    JOBID=NONE   # local execution: nothing to wait for
    return
  fi
  crash "queue_wait(): only local sites in this copy"
}

check_output()
# check_output TOKEN OUTPUT WORKFLOW SCRIPT JOBID
{
  if grep "$1" $2 > /dev/null
  then
    return 0
  fi
  echo "check_output(): Could not find '$1' in $2"
  return 1
}
