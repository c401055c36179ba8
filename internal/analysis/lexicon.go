// Switchboard sentiment lexicon.
//
// Written for the Switchboard project (not derived from another word list)
// and distributed under the same licence as the project. Entries are English
// words and short phrases, lower-case, with ASCII apostrophes, each scored on
// AFINN's integer scale from -3 (very negative) to +3 (very positive); 0 marks
// a phrase that must not be read word by word ("no thanks", "i'd like").
//
// How it scales: Score adds up the entries found in the caller's words. A
// phrase wins over the words inside it. An intensifier ("very", "so", "a
// bit") in the one or two words before an entry multiplies it (see
// intensifiers). A negator ("not", "never", any "n't") multiplies the entries
// in the next three words by negatorScale, flipping and damping them. Around
// "but" the clause before counts half and the clause after one and a half.
// The sum s is mapped into -1..1 by s/sqrt(s²+15), as VADER does, so one
// "great" (3) scores about 0.61 and a long run of complaints approaches -1.
//
// The vocabulary leans on what callers say to a voice assistant or a call
// centre: praise and thanks, complaints, billing, waiting, broken service,
// cancellation and escalation. Words that are usually neutral in a call
// ("help", "sorry", "please", "sure", "okay") are deliberately absent.

package analysis

// lexicon maps a word or phrase to its valence, -3..3.
var lexicon = map[string]int{
	// Praise and delight.
	"amazing": 3, "amazingly": 3, "awesome": 3, "brilliant": 3, "excellent": 3, "exceptional": 3,
	"fantastic": 3, "outstanding": 3, "perfect": 3, "perfectly": 3, "superb": 3, "wonderful": 3,
	"wonderfully": 3, "terrific": 3, "phenomenal": 3, "marvelous": 3, "marvellous": 3, "incredible": 3,
	"great": 3, "greatest": 3, "best": 3, "flawless": 3, "impeccable": 3, "stellar": 3, "impressive": 3,
	"impressed": 3, "delighted": 3, "thrilled": 3, "ecstatic": 3, "overjoyed": 3, "love": 3, "loved": 3,
	"loving": 3, "loves": 3, "lovely": 3, "beautiful": 3, "beautifully": 3, "excited": 3, "exciting": 3,
	"successful": 3, "lifesaver": 3, "life saver": 3, "top notch": 3, "spot on": 3, "above and beyond": 3,
	"over the moon": 3, "made my day": 3, "couldn't be happier": 3, "good job": 3, "great job": 3,
	"great service": 3, "five stars": 3, "5 stars": 3, "blown away": 3, "superb service": 3,

	// Approval and satisfaction.
	"good": 2, "nice": 2, "happy": 2, "happier": 2, "glad": 2, "pleased": 2, "pleasant": 2,
	"pleasure": 2, "satisfied": 2, "satisfying": 2, "helpful": 2, "useful": 2,
	"grateful": 2, "thankful": 2, "thanks": 2, "thank you": 2, "thank": 2, "thanks a lot": 2,
	"much appreciated": 2, "appreciate": 2, "appreciated": 2, "appreciative": 2, "better": 2,
	"improve": 2, "improved": 2, "improvement": 2, "resolved": 2, "solved": 2, "fixed": 2,
	"sorted": 1, "sorted out": 2, "problem solved": 2, "easy": 2, "easier": 2, "smooth": 2,
	"smoothly": 2, "seamless": 2, "efficient": 2, "convenient": 2, "friendly": 2, "polite": 2,
	"patient": 2, "kind": 2, "kindly": 1, "courteous": 2, "professional": 2, "knowledgeable": 2,
	"reliable": 2, "recommend": 2, "recommended": 2, "worth it": 2, "worthwhile": 2,
	"affordable": 2, "bargain": 2, "bonus": 2, "enjoy": 2, "enjoyed": 2, "enjoying": 2, "fun": 2,
	"sweet": 2, "yay": 2, "hooray": 2, "relieved": 2, "relief": 2, "calm": 2, "comfortable": 2,
	"confident": 2, "trust": 2, "trusted": 2, "trustworthy": 2, "honest": 2, "success": 2,
	"benefit": 2, "beneficial": 2, "supportive": 2, "responsive": 2, "attentive": 2, "generous": 2,
	"fortunately": 2, "luckily": 2, "lucky": 2, "interested": 2, "interesting": 2, "like": 1,
	"liked": 2, "likes": 2, "well done": 2, "sounds good": 2, "sounds great": 3, "looking forward": 2,
	"can't wait": 2, "no complaints": 2, "works great": 3, "works perfectly": 3, "win": 2, "won": 2,
	"awesome service": 3, "caring": 2, "cheerful": 2, "wow": 1, "cool": 1, "fine": 1, "fair": 1,
	"fairly priced": 2, "reasonable": 1, "quick": 1, "quickly": 1, "fast": 1, "prompt": 1,
	"promptly": 1, "simple": 1, "clear": 1, "clearly explained": 2, "accurate": 1,
	"free": 1, "discount": 1, "hope": 1, "hopefully": 1, "wish": 1,
	"no problem": 1, "no worries": 1, "not bad": 1, "not too bad": 1, "can't complain": 1,
	"all good": 1, "works for me": 1, "that works": 1, "on time": 1, "no issues": 1,
	"no rush": 1, "welcome": 1, "solution": 1, "works now": 2, "working now": 2,
	"up and running": 2, "thrilled with": 3, "happy with": 2,

	// Phrases that are neutral although a word in them is not: matched
	// first, they keep "no" from negating and "like" from praising.
	"no thanks": 0, "no thank you": 0, "would like": 0, "i'd like": 0, "we'd like": 0,
	"you'd like": 0, "like to": 0, "feel like": 0, "feels like": 0, "looks like": 0,
	"sounds like": 0, "seems like": 0, "something like": 0, "just like": 0, "like a": 0,
	"like this": 0, "kind of like": 0, "good morning": 0, "good afternoon": 0, "good evening": 0,
	"good night": 0, "good day": 0, "good bye": 0, "fair enough": 0,
	"pretty much": 0, "kind regards": 0, "as well": 0, "very well": 0, "no doubt": 0,
	"how are you": 0, "not sure": 0, "i'm not sure": 0, "help desk": 0, "customer service": 0,
	"free trial": 0, "just fine": 1, "best regards": 0, "thank goodness": 2, "bad debt": -1,

	// Dissatisfaction and complaint.
	"bad": -3, "badly": -3, "terrible": -3, "terribly": -3, "horrible": -3, "horribly": -3,
	"awful": -3, "awfully": -3, "worst": -3, "worse": -3, "ridiculous": -3, "ridiculously": -3,
	"disgusting": -3, "disgusted": -3, "appalling": -3, "appalled": -3, "atrocious": -3,
	"pathetic": -3, "outrageous": -3, "unacceptable": -3, "disgraceful": -3, "disgrace": -3,
	"shameful": -3, "furious": -3, "livid": -3, "angry": -3, "angrier": -3, "enraged": -3,
	"hate": -3, "hated": -3, "hates": -3, "hateful": -3, "nightmare": -3, "scam": -3,
	"scammed": -3, "scammer": -3, "scammers": -3, "fraud": -3, "fraudulent": -3, "incompetent": -3,
	"incompetence": -3, "abysmal": -3, "dreadful": -3, "horrendous": -3, "sucks": -3, "sucked": -3,
	"crap": -3, "crappy": -3, "shit": -3, "shitty": -3, "rubbish": -3, "garbage": -3, "joke": -2,
	"a joke": -3, "rip off": -3, "ripoff": -3, "ripped off": -3, "disaster": -3, "disastrous": -3,
	"waste of time": -3, "waste of money": -3, "waste of my time": -3, "fed up": -3, "sick of": -3,
	"sick and tired": -3, "fuming": -3, "liar": -3, "liars": -3, "cheated": -3, "misleading": -3,
	"unbelievable": -2, "shocking": -2, "shocked": -2, "lousy": -3, "miserable": -3, "despise": -3,
	"infuriating": -3, "infuriated": -3, "never again": -3, "worst service": -3,
	"take my business elsewhere": -3, "leave me alone": -3, "panic": -3, "panicking": -3,
	"poor": -2, "poorly": -2, "frustrated": -2, "frustrating": -2, "frustration": -2,
	"annoyed": -2, "annoying": -2, "annoyance": -2, "irritated": -2, "irritating": -2,
	"upset": -2, "disappointed": -2, "disappointing": -2, "disappointment": -2, "unhappy": -2,
	"dissatisfied": -2, "unsatisfied": -2, "unsatisfactory": -2, "complaint": -2, "complaints": -2,
	"complain": -2, "complaining": -2, "complained": -2, "problem": -2, "problems": -2,
	"problematic": -2, "error": -2, "errors": -2, "fault": -2, "faulty": -2, "wrong": -2,
	"mistake": -2, "mistakes": -2, "mistaken": -2, "fail": -2, "failed": -2, "fails": -2,
	"failing": -2, "failure": -2, "slow": -2, "slowly": -1, "confusing": -2, "confused": -2,
	"rude": -2, "rudely": -2, "unhelpful": -2, "useless": -2, "pointless": -2, "waste": -2,
	"wasted": -2, "wasting": -2, "worried": -2, "worry": -2, "worrying": -2, "unfortunately": -2,
	"sadly": -2, "sad": -2, "mess": -2, "messed up": -2, "messy": -2, "screwed": -2,
	"screwed up": -2, "hassle": -2, "inconvenient": -2, "inconvenience": -2, "unreliable": -2,
	"unprofessional": -2, "disrespectful": -2, "disrespected": -2, "ignored": -2, "ignoring": -2,
	"lied": -2, "lie": -2, "lies": -2, "lying": -2, "misled": -2, "threatened": -2,
	"threaten": -2, "sue": -2, "suing": -2, "overcharged": -2, "overcharge": -2,
	"overcharging": -2, "overpriced": -2, "charged twice": -2, "double charged": -2,
	"hidden fees": -2, "broken": -2, "broke": -2, "breaks": -1, "damaged": -2, "defective": -2,
	"stuck": -2, "impossible": -2, "struggle": -2, "struggling": -2, "struggled": -2,
	"stolen": -2, "lost": -2, "crash": -2, "crashed": -2, "crashing": -2, "crashes": -2,
	"glitch": -2, "glitches": -2, "buggy": -2, "outage": -2, "outages": -2, "emergency": -2,
	"spam": -2, "hung up": -2, "hang up on me": -2, "still waiting": -2, "kept waiting": -2,
	"been waiting": -2, "never received": -2, "never arrived": -2, "never showed up": -2,
	"didn't arrive": -2, "hasn't arrived": -2, "not received": -2, "not working": -2,
	"isn't working": -2, "stopped working": -2, "doesn't work": -2, "didn't work": -2,
	"won't work": -2, "not work": -2, "no help": -2, "of no help": -2, "speak to a manager": -2,
	"speak to your manager": -2, "speak to a supervisor": -2, "talk to a manager": -2,
	"talk to a human": -1, "speak to a human": -1, "real person": -1, "report you": -2,
	"stop calling": -2, "stop calling me": -2, "don't call me": -2, "remove me": -2,
	"scared": -2, "afraid": -2, "anxious": -2, "stressed": -2, "stressful": -2, "stress": -2,
	"nervous": -2, "hurt": -2, "hurts": -2, "pain": -2, "painful": -2, "sick": -2, "tired": -2,
	"exhausted": -2, "crying": -2, "dead": -2, "died": -3, "dislike": -2, "disliked": -2,
	"horrified": -3, "terrified": -3, "nasty": -3, "greedy": -2, "dishonest": -3, "unfair": -2,
	"unfairly": -2, "denied": -2, "refused": -2, "refuse": -2, "rejected": -2, "disconnected": -2,
	"cut off": -1, "dropped": -1, "lag": -1, "laggy": -2, "unresponsive": -2, "uncomfortable": -2,
	"embarrassing": -2, "embarrassed": -2, "shame": -2, "pity": -1, "bothered": -1, "bother": -1,
	"disturbing": -2, "harassment": -3, "harassing": -3, "harassed": -3, "worthless": -3,
	"unusable": -3, "useless service": -3, "inaccurate": -2, "incorrect": -2, "incorrectly": -2,
	"missed": -1, "missing": -1, "delay": -1, "delayed": -1, "delays": -1, "late": -1,
	"later than": -1, "cancel": -1, "cancelled": -1, "canceled": -1, "cancelling": -1,
	"canceling": -1, "cancellation": -1, "refund": -1, "refunds": -1, "chargeback": -2,
	"dispute": -2, "disputed": -2, "escalate": -1, "escalated": -1, "escalation": -1,
	"expensive": -1, "pricey": -1, "costly": -1, "issue": -1, "issues": -1, "concern": -1,
	"concerned": -1, "concerns": -1, "bug": -1, "bugs": -1, "difficult": -1, "difficulty": -1,
	"unable": -1, "unclear": -1, "urgent": -1, "urgently": -1, "on hold": -1, "no way": -1,
	"not interested": -1, "unsubscribe": -1, "annoyingly": -2, "hopeless": -3, "helpless": -2,
	"nonsense": -2, "stupid": -3, "idiot": -3, "idiots": -3, "damn": -2, "hell": -2, "wtf": -3,
	"unreal": -1, "insane": -2, "crazy": -1, "fuss": -1, "tedious": -2, "cumbersome": -2,
	"complicated": -1, "awkward": -1, "weird": -1, "strange": -1, "suspicious": -2, "doubt": -1,
	"don't like": -2, "do not like": -2, "didn't like": -2, "did not like": -2, "regret": -2, "regretting": -2, "sorry to say": -1, "no one": -1, "nobody called": -2,
	"no response": -2, "no answer": -1, "never called back": -2, "didn't call back": -2,
	"not happy": -2, "not good enough": -2, "not acceptable": -3, "went wrong": -2,
}

// negatorScale is what a negator multiplies the entries after it by: the
// sign flips and the strength drops ("not good" is milder than "bad").
const negatorScale = -0.74

// negationScope is how many words after a negator it reaches.
const negationScope = 3

// negators flip the entries in the next negationScope words. Any word
// ending in "n't" is a negator too.
var negators = set("not", "no", "never", "none", "nothing", "nobody", "nowhere", "neither", "nor",
	"without", "cannot", "hardly", "barely", "rarely", "seldom", "dont", "doesnt", "didnt", "isnt",
	"wasnt", "arent", "werent", "cant", "couldnt", "wouldnt", "shouldnt", "wont", "havent", "hasnt",
	"aint")

// notNegatedAfterNo are words after which "no" answers a question rather
// than negating what follows ("No, it's fine" transcribed without a comma).
var notNegatedAfterNo = set("i", "i'm", "im", "it", "it's", "its", "that", "that's", "thats", "we",
	"you", "they", "he", "she", "thank", "thanks", "but", "we're", "you're", "they're", "i've", "i'll")

// intensifiers multiply the entry in the next one or two words; below 1
// they soften it.
var intensifiers = map[string]float64{
	"very": 1.5, "really": 1.5, "so": 1.5, "extremely": 1.8, "incredibly": 1.8, "absolutely": 1.5,
	"totally": 1.5, "completely": 1.5, "utterly": 1.8, "truly": 1.5, "super": 1.5, "highly": 1.5,
	"seriously": 1.5, "especially": 1.3, "particularly": 1.3, "most": 1.3, "too": 1.3, "such": 1.3,
	"quite": 1.2, "pretty": 1.2, "definitely": 1.3, "genuinely": 1.3, "deeply": 1.5, "real": 1.3,
	"way": 1.3, "entirely": 1.5, "exceedingly": 1.8, "insanely": 1.8, "hugely": 1.5, "massively": 1.5,
	"bloody": 1.5, "damn well": 1.5, "so very": 2.0, "really really": 2.0,
	"slightly": 0.5, "somewhat": 0.6, "a bit": 0.6, "a little": 0.6, "a little bit": 0.5,
	"kind of": 0.6, "sort of": 0.6, "kinda": 0.6, "sorta": 0.6, "marginally": 0.5, "partly": 0.6,
	"mildly": 0.6, "fairly": 0.8, "rather": 0.9,
}
